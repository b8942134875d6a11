"""The hospital course: as the structured record tells it, then the note sentences FOCUS
keeps."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime
from typing import Any

from pipeline.clinical.clinical_terms import STATUS_TERM
from pipeline.clinical.episode_diagnoses import implied_treatments
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.mapped import INPATIENT_CLASSES
from pipeline.evidence.model import (
    AdministrationAttributes,
    CarePlanAttributes,
    DeviceAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    NarrativeAttributes,
    ProcedureAttributes,
    attributes_as,
    aware,
)
from pipeline.evidence.summary import (
    Sentence,
)
from pipeline.summarizing.focus import (
    Candidate,
    TokenSalience,
    default_salience,
    select,
    sentence_scores,
)
from pipeline.summarizing.sections.common import (
    NEVER,
    cited_sentence,
    each_procedure_once,
    earlier_stay_end,
    home_equipment,
    is_index_procedure,
    performed,
    procedures_by_stay,
    significant_procedures,
    split_at,
)
from pipeline.summarizing.sections.given import each_drug_once, given_in_periods
from pipeline.summarizing.sections.stay import DEMOGRAPHIC_LINE
from pipeline.text.rendering import plain_term

# A note line that carries SNOMED CT semantic tags ("Patient is presenting with history of tubal
# ligation (situation).") was generated from the coded record: the draft states those codes from
# the record itself, dated and listed where they belong; quoted as course it repeats them undated
# and reads a procedure of this stay as a past event.
CODED_LINE = re.compile(
    r"\((?:disorder|finding|situation|procedure|morphologic abnormality|regime/therapy|"
    r"observable entity|event)\)",
    re.IGNORECASE,
)


def _course_order(fact: Fact, state: EvidenceState) -> tuple[Any, ...]:
    ref = next(ref for ref in fact.sources if ref.is_text)
    document = state.document(ref.document or "")
    return (document.date is None, document.date, document.id, ref.page, ref.start)


def structured_course_section(
    state: EvidenceState, render: Any, tables: tuple[CodeTable, CodeTable], stay: Fact | None
) -> list[Sentence]:
    """The course as the structured record tells it: admission and its reason, the main
    treatment of each stay of the episode (its operations and interventions; with none, its
    significant procedures, a nursing stay's therapies; or what the record implies was done),
    the drugs the stay gave, the home equipment it supplied, medications started and stopped,
    discharge. ``tables``: the routine procedures and the home equipment. Beside an operation,
    the other procedures, and the results, are their sections' alone (readers read each
    twice); a course without the operation, or a nursing stay's without its therapies, read to
    readers as missing the main treatment."""
    if stay is None or not isinstance(stay.attributes, EncounterAttributes):
        return []
    routine, equipment = tables
    sentences = [_admitted(state, render, routine, stay)]
    recoveries = split_at(earlier_stay_end(state), _recovery_care(state, routine), performed)
    by_stay = procedures_by_stay(state, routine)
    for (in_earlier, facts), recovered in zip(by_stay, recoveries, strict=True):
        operations = [f for f in facts if is_index_procedure(f, routine)]
        main = each_procedure_once(operations or facts)
        if main:
            first = min((performed(f) or NEVER for f in operations), default=None)
            recovery = [f for f in recovered if first and (performed(f) or NEVER) >= first]
            until = max((_ended(f) for f in recovery), default=None)
            text = render.course_procedures(main, in_earlier, until)
            cited = [fact_id for p in main for fact_id in p.fact_ids]
            cited += [f.id for f in recovery]
            sentences.append(cited_sentence("hospital_course", text, cited))
    sentences += _treatment_given(state, render)
    # Home equipment supplied in the stay is a treatment begun (CPAP for sleep apnoea): a course
    # without it read to readers as one where nothing was started.
    supplied = home_equipment(state, equipment)[1]
    if supplied:
        plans = _treatment_planned(state, equipment)
        begun = [(activity, attributes_as(f, CarePlanAttributes).when) for f, activity in plans]
        when = [attributes_as(f, DeviceAttributes).when for f in supplied]
        days = {aware(w).date() for w in when if w is not None}
        # One delivery day is said once, not after each item.
        on = when[0] if None not in when and len(days) == 1 else None
        text = render.course_supplied([f.attributes for f in supplied], begun, on)
        cited = [*(f.id for f in supplied), *dict.fromkeys(f.id for f, _ in plans)]
        sentences.append(cited_sentence("hospital_course", text, cited))
    changes = state.medications.changes
    started = [c for c in changes if c.kind == "new" and c.discharge]
    stopped = [c for c in changes if c.kind == "stopped" and c.admission]
    if started or stopped:
        text = render.course_medications([c.name for c in started], [c.name for c in stopped])
        changed = [c.discharge for c in started] + [c.admission for c in stopped]
        sentences.append(cited_sentence("hospital_course", text, [c for c in changed if c]))
    if stay.attributes.end is not None:
        sentences.append(
            cited_sentence("hospital_course", render.discharged(stay.attributes), [stay.id])
        )
    return sentences


def _recovery_care(state: EvidenceState, routine: CodeTable) -> list[Fact]:
    """The post-operative care the record holds (``recovery_keywords``: routine care, left out of
    the Procedures section), which the course dates after its operation: ten readers of the last
    rounds found the course silent on the recovery the record dates."""
    # A deployment's own table may predate the key: no recovery is said, nothing fails.
    words = routine.extra.get("recovery_keywords", [])
    return [
        f
        for f in state.facts["procedure"]
        if any(word in attributes_as(f, ProcedureAttributes).name.lower() for word in words)
    ]


def _ended(fact: Fact) -> datetime:
    care = attributes_as(fact, ProcedureAttributes)
    return care.performed_end or care.performed_start or NEVER


# An encounter type that names a treatment (SNOMED CT's "regime/therapy" tag: "Drug
# rehabilitation and detoxification") says what the stay did; "Hospital admission (procedure)"
# says only that it happened.
THERAPY_TYPE = re.compile(r"\(regime/therapy\)\s*$", re.IGNORECASE)


def _admitted(state: EvidenceState, render: Any, routine: CodeTable, stay: Fact) -> Sentence:
    """The admission and its reason. Reasons that are only status terms ("Awaiting
    transplantation of kidney") are what the stay was coded as, not what it was for. What the
    record implies the stay did, with no procedure recorded (its "History of renal transplant"
    recorded that day), is said here, where the story starts: a course of "Admitted for
    Awaiting transplantation of kidney" and the discharge read as if nothing was done. A stay
    whose type names a treatment ("Drug rehabilitation and detoxification") says it too."""
    encounter = attributes_as(stay, EncounterAttributes)
    coded = [*encounter.reasons, *encounter.arranged_reasons]
    status_only = all(STATUS_TERM.search(plain_term(reason)) for reason in coded)
    done = significant_procedures(state, routine)
    implied = [] if done else implied_treatments(state)
    if not implied:
        therapies = [t for t in encounter.types if THERAPY_TYPE.search(t)]
        text = render.admitted(encounter, therapies, status_only)
        return cited_sentence("hospital_course", text, [stay.id])
    what = [(w, onset) for w, onset, _ in implied]
    text = render.admitted_implied(encounter, coded if status_only else [], what)
    return cited_sentence("hospital_course", text, [stay.id, *(f.id for *_, f in implied)])


def _treatment_given(state: EvidenceState, render: Any) -> list[Sentence]:
    """The drugs this stay gave (never a readmission's earlier stay's, never vaccines), named
    in the course: two doses of IV furosemide are the treatment of a heart failure stay, and a
    course that names only the admission reads as if nothing was done. An inpatient stay's only:
    a fluoride gel at a check-up is not a treatment of a stay."""
    stay = state.stay()
    if stay is None or stay.class_code not in INPATIENT_CLASSES:
        return []
    doses = [
        f
        for f in given_in_periods(state)[1]
        if attributes_as(f, AdministrationAttributes).kind == "medication"
    ]
    if not doses:
        return []
    text = render.course_given(each_drug_once(doses))
    return [cited_sentence("hospital_course", text, [f.id for f in doses])]


def _treatment_planned(state: EvidenceState, equipment: CodeTable) -> list[tuple[Fact, str]]:
    """The activities of the stay's care plans that the home equipment serves ("Continuous
    positive airway pressure ventilation treatment"), each with its plan: the treatment the
    equipment supplied in the stay begins, which readers found the course never said."""
    stay = state.stay()
    if stay is None or stay.start is None:
        return []
    until = aware(stay.end or stay.start)
    return [
        (f, activity)
        for f in state.facts["care_plan"]
        if (plan := attributes_as(f, CarePlanAttributes)).kind == "care_plan"
        and plan.when is not None
        and aware(stay.start) <= aware(plan.when) <= until
        for activity in plan.activities
        if equipment.matches(None, activity)
    ]


def hospital_course_section(
    state: EvidenceState, salience: TokenSalience | None, ratio: float, render: Any
) -> list[Sentence]:
    """Note sentences FOCUS keeps, quoted verbatim, in the order they were written; each once
    (templated notes repeat lines), never a line that only restates the patient's demographics."""
    facts = [
        fact
        for fact in state.facts["course"]
        if any(ref.is_text for ref in fact.sources)
        and not (
            isinstance(fact.attributes, NarrativeAttributes)
            and (
                DEMOGRAPHIC_LINE.match(fact.attributes.text.strip())
                or CODED_LINE.search(fact.attributes.text)
            )
        )
    ]
    if not facts:
        return []
    scorer = salience or default_salience()
    by_page: dict[tuple[str, int], list[Fact]] = defaultdict(list)
    for fact in facts:
        ref = next(ref for ref in fact.sources if ref.is_text)
        by_page[(ref.document or "", ref.page or 1)].append(fact)
    kept: list[Fact] = []
    for (document_id, page_number), page_facts in by_page.items():
        text = state.document(document_id).page(page_number).text
        refs = [next(ref for ref in f.sources if ref.is_text) for f in page_facts]
        candidates = [Candidate(ref.start or 0, ref.end or 0, ref.quote or "") for ref in refs]
        offsets, token_scores = scorer(text)
        scores = sentence_scores(text, candidates, offsets, token_scores)
        kept += [page_facts[index] for index in select(candidates, scores, ratio)]
    kept.sort(key=lambda fact: _course_order(fact, state))
    said: set[str] = set()
    sentences = []
    for fact in kept:
        text = render.quote(fact.attributes)
        words = " ".join(text.lower().split())
        if words not in said:
            said.add(words)
            sentences.append(cited_sentence("hospital_course", text, [fact.id]))
    return sentences
