"""The evidence-only summarizer: a discharge summary rendered from facts, no language model.

Every sentence is rendered by a template (``templates/summary/sentences.txt.j2``) from the facts it
cites, or quoted verbatim from a note, so it can state nothing the evidence does not hold. What is
computed is computed here in code: medication changes (by :mod:`pipeline.clinical.reconcile`),
result trends (first → last, and the latest value before admission), result flags against reference
ranges (:mod:`pipeline.clinical.results`), and the hospital course's selection by FOCUS.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pipeline.checking.checker import check_summary_sentences
from pipeline.clinical.record_conflicts import instruction_like
from pipeline.clinical.results import is_minor, is_vital_sign
from pipeline.clinical.tables import CodeTable, table
from pipeline.evidence.model import (
    AdministrationAttributes,
    AllergyAttributes,
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    FactCategory,
    ImagingAttributes,
    LabResultAttributes,
    MedicationAttributes,
    NarrativeAttributes,
    ProcedureAttributes,
    ReviewFlag,
    attributes_as,
    aware,
    stable_id,
)
from pipeline.evidence.summary import (
    NOT_DOCUMENTED,
    SECTION_SPECS,
    SECTIONS,
    SectionKey,
    Sentence,
    SentenceFlag,
    Summary,
    SummarySection,
)
from pipeline.settings import PipelineSettings
from pipeline.summarizing.focus import (
    Candidate,
    TokenSalience,
    default_salience,
    select,
    sentence_scores,
)
from pipeline.text.rendering import macros

BACKEND = "provenote-evidence-only"
BACKEND_VERSION = "1"
# Sorts before every date; only ever compared when a dated fact's date is typed as optional.
_NEVER = datetime.min.replace(tzinfo=UTC)
# A note's line that only restates who the patient is ("Ana is a 65 year-old hispanic female.")
# belongs to the header, which says it from the record; templated notes repeat it in every note.
DEMOGRAPHIC_LINE = re.compile(
    r"^[\w'’.-]+(?: [\w'’.-]+){0,3} is an? \d{1,3}[- ]year[- ]old\b[^.;:]*\.?$", re.IGNORECASE
)
# A templated chief complaint that says nothing ("No complaints.") is not a complaint.
NOTHING_SAID = frozenset({"no complaints", "no complaint", "none", "n/a", "not applicable"})
# Values are "at discharge" only when taken in the stay's last day.
DISCHARGE_WINDOW = timedelta(hours=24)
_CATEGORY_SECTIONS: dict[str, SectionKey] = {
    "diagnosis": "diagnoses",
    "medication": "medications",
    "allergy": "allergies",
    "procedure": "procedures",
    "lab_result": "results",
    "pending_result": "pending_results",
    "follow_up": "follow_up",
    "course": "hospital_course",
}


def _sentence(section: SectionKey, text: str, citations: Sequence[str]) -> Sentence:
    cited = list(dict.fromkeys(citations))
    return Sentence(
        id=stable_id("s", section, text, *cited),
        section=section,
        text=text.strip(),
        citations=cited,
    )


def _stay(state: EvidenceState, render: Any) -> list[Sentence]:
    sentences = []
    # Each complaint once, however many notes state it, and all of them on one line.
    complaints: dict[str, Fact] = {}
    for fact in state.facts["patient_info"]:
        sentences.append(_sentence("stay", render.patient(fact.attributes), [fact.id]))
    for fact in state.facts["encounter"]:
        stay = fact.attributes
        assert isinstance(stay, EncounterAttributes)
        if stay.kind == "chief_complaint":
            said = (stay.text or "").strip()
            if said.lower().rstrip(".") not in NOTHING_SAID:
                complaints.setdefault(said.lower(), fact)
            continue
        sentences.append(_sentence("stay", render.stay(stay), [fact.id]))
        if stay.reasons:
            sentences.append(_sentence("stay", render.reasons(stay), [fact.id]))
        if stay.attending:
            sentences.append(_sentence("stay", render.attending(stay), [fact.id]))
        if stay.discharge_disposition:
            sentences.append(_sentence("stay", render.disposition(stay), [fact.id]))
    if complaints:
        cited = [f.id for f in complaints.values()]
        said_once = [
            (attributes_as(f, EncounterAttributes).text or "").strip() for f in complaints.values()
        ]
        text = render.chief_complaints(said_once)
        sentences.append(_sentence("stay", text, cited))
    return sentences


def _listed(state: EvidenceState, *listings: str) -> list[Fact]:
    """Diagnosis facts of these listings (pipeline.clinical.diagnoses), in the order given, then by
    onset: never alphabetical."""
    facts = [
        f
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes)
        and (f.attributes.listing or "episode") in listings
    ]
    return sorted(
        facts,
        key=lambda f: (
            listings.index(attributes_as(f, DiagnosisAttributes).listing or "episode"),
            attributes_as(f, DiagnosisAttributes).onset is None,
            attributes_as(f, DiagnosisAttributes).onset,
        ),
    )


def _diagnoses(state: EvidenceState, render: Any) -> list[Sentence]:
    """The principal diagnosis first, then the diagnoses that began in the episode."""
    return [
        _sentence("diagnoses", render.diagnosis(f.attributes), [f.id, *_status_post_of(state, f)])
        for f in _listed(state, "principal", "episode")
    ]


def _status_post_of(state: EvidenceState, fact: Fact) -> list[str]:
    """The procedure a "Status post" line names, to cite beside the diagnosis."""
    diagnosis = attributes_as(fact, DiagnosisAttributes)
    return [
        f.id
        for f in state.facts["procedure"]
        if diagnosis.status_post is not None
        and attributes_as(f, ProcedureAttributes).name == diagnosis.status_post
        and attributes_as(f, ProcedureAttributes).performed_start == diagnosis.status_post_on
    ]


def _active_problems(state: EvidenceState, render: Any) -> list[Sentence]:
    return [
        _sentence("active_problems", render.problem(f.attributes), [f.id])
        for f in _listed(state, "active")
    ]


def _social_history(state: EvidenceState, render: Any) -> list[Sentence]:
    """One short line: social findings are context, not diagnoses."""
    facts = _listed(state, "social")
    if not facts:
        return []
    text = render.social([f.attributes for f in facts])
    return [_sentence("social_history", text, [f.id for f in facts])]


def _course_order(fact: Fact, state: EvidenceState) -> tuple[Any, ...]:
    ref = next(ref for ref in fact.sources if ref.is_text)
    document = state.document(ref.document or "")
    return (document.date is None, document.date, document.id, ref.page, ref.start)


def _by_time(facts: Iterable[Fact], when: Callable[[Fact], datetime | None]) -> list[Fact]:
    """Facts in time order, the undated last (a stable sort keeps their order among themselves)."""
    dated = sorted((f for f in facts if when(f) is not None), key=lambda f: when(f) or _NEVER)
    return dated + [f for f in facts if when(f) is None]


def _performed(fact: Fact) -> datetime | None:
    return attributes_as(fact, ProcedureAttributes).performed_start


def _procedure_code_and_name(fact: Fact) -> tuple[str | None, str]:
    procedure = attributes_as(fact, ProcedureAttributes)
    return (procedure.code.code if procedure.code else None), procedure.name


def _effective(fact: Fact) -> datetime | None:
    return attributes_as(fact, LabResultAttributes).effective


def _structured_course(
    state: EvidenceState, render: Any, routine: CodeTable, stay: Fact | None
) -> list[Sentence]:
    """The course as the structured record tells it: admission and its reason, significant
    procedures, abnormal results, medications started and stopped, discharge."""
    if stay is None or not isinstance(stay.attributes, EncounterAttributes):
        return []
    sentences = [_sentence("hospital_course", render.admitted(stay.attributes), [stay.id])]
    procedures = _significant_procedures(state, routine)
    if procedures:
        text = render.course_procedures([f.attributes for f in procedures])
        sentences.append(_sentence("hospital_course", text, [f.id for f in procedures]))
    abnormal = [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and not f.attributes.baseline
        and not is_vital_sign(f.attributes)
        and f.attributes.flag in _FLAG_ORDER
    ]
    if abnormal:
        worst: dict[str, tuple[LabResultAttributes, str | None, list[str]]] = {}
        for fact in abnormal:
            result = attributes_as(fact, LabResultAttributes)
            seen = worst.get(result.name)
            flag = (
                result.flag if seen is None else min((seen[1], result.flag), key=_FLAG_ORDER.index)
            )
            worst[result.name] = (result, flag, [*(seen[2] if seen else []), fact.id])
        text = render.course_results([(r, flag) for r, flag, _ in worst.values()])
        cited = [fact_id for _, _, ids in worst.values() for fact_id in ids]
        sentences.append(_sentence("hospital_course", text, cited))
    changes = state.medications.changes
    started = [c for c in changes if c.kind == "new" and c.discharge]
    stopped = [c for c in changes if c.kind == "stopped" and c.admission]
    if started or stopped:
        text = render.course_medications([c.name for c in started], [c.name for c in stopped])
        changed = [c.discharge for c in started] + [c.admission for c in stopped]
        sentences.append(_sentence("hospital_course", text, [c for c in changed if c]))
    if stay.attributes.end is not None:
        sentences.append(
            _sentence("hospital_course", render.discharged(stay.attributes), [stay.id])
        )
    return sentences


def _condition_at_discharge(state: EvidenceState, render: Any, stay: Fact | None) -> list[Sentence]:
    """The Joint Commission's condition at discharge: disposition, the last vital signs, and
    what the notes say of it, quoted."""
    sentences = []
    if (
        stay is not None
        and isinstance(stay.attributes, EncounterAttributes)
        and stay.attributes.discharge_disposition
    ):
        text = render.disposition(stay.attributes)
        sentences.append(_sentence("condition_at_discharge", text, [stay.id]))
    vitals = [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and is_vital_sign(f.attributes)
        and f.attributes.effective is not None
    ]
    if vitals:
        last = max(_effective(f) or _NEVER for f in vitals)
        latest = [f for f in vitals if _effective(f) == last]
        moment = _last_moment(last, stay)
        text = render.vital_signs(moment, last, [f.attributes for f in latest])
        sentences.append(_sentence("condition_at_discharge", text, [f.id for f in latest]))
    sentences += [
        _sentence("condition_at_discharge", render.quote(f.attributes), [f.id])
        for f in state.facts["condition_statement"]
    ]
    return sentences


def _hospital_course(
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
            and DEMOGRAPHIC_LINE.match(fact.attributes.text.strip())
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
            sentences.append(_sentence("hospital_course", text, [fact.id]))
    return sentences


def _significant_procedures(state: EvidenceState, routine: CodeTable) -> list[Fact]:
    """The episode's clinically significant procedures: the index procedures (an operation or
    intervention, ``index_keywords``) first, then the rest, each group by date; administrative
    and routine care (admission, assessment, screening…) left out (the evidence keeps it)."""
    significant = [
        f
        for f in _by_time(state.facts["procedure"], _performed)
        if not routine.matches(*_procedure_code_and_name(f))
    ]
    words = routine.extra.get("index_keywords", [])

    def is_index(fact: Fact) -> bool:
        return any(word in _procedure_code_and_name(fact)[1].lower() for word in words)

    return [f for f in significant if is_index(f)] + [f for f in significant if not is_index(f)]


def _procedures(state: EvidenceState, render: Any, routine: CodeTable) -> list[Sentence]:
    return [
        _sentence("procedures", render.procedure(f.attributes), [f.id])
        for f in _significant_procedures(state, routine)
    ]


def _medications(state: EvidenceState, render: Any) -> list[Sentence]:
    sentences = []
    unconfirmed = state.medications.unconfirmed()
    held = [c for c in state.medications.changes if c.kind == "held_or_stopped"]
    prescribed = [c for c in state.medications.changes if c.kind == "prescribed_not_ordered"]
    for change in state.medications.changes:
        if change.kind in ("unconfirmed", "held_or_stopped", "prescribed_not_ordered"):
            continue
        before = state.fact(change.admission).attributes if change.admission else None
        after = state.fact(change.discharge).attributes if change.discharge else None
        citations = [fact_id for fact_id in (change.admission, change.discharge) if fact_id]
        text = render.medication_change(change, before, after)
        sentences.append(_sentence("medications", text, citations))
    if unconfirmed:
        stale = [state.fact(fact_id) for fact_id in unconfirmed]
        text = render.not_renewed([f.attributes for f in stale])
        sentences.append(_sentence("medications", text, [f.id for f in stale]))
    for listed, macro in (
        (prescribed, render.prescribed_not_ordered),
        (held, render.held_or_stopped),
    ):
        if listed:
            cited = [i for c in listed for i in (c.admission, c.noted, *c.stay_orders) if i]
            sentences.append(_sentence("medications", macro(listed), cited))
    # A drug a note prescribes is never "not continued": it has its line above.
    prescribed_orders = {i for c in prescribed for i in c.stay_orders}
    given = [
        f
        for f in state.facts["medication"]
        if isinstance(f.attributes, MedicationAttributes)
        and f.attributes.phase == "inpatient"
        and f.id not in prescribed_orders
    ]
    if given:
        text = render.given_during_stay([f.attributes for f in given])
        sentences.append(_sentence("medications", text, [f.id for f in given]))
    administered = _by_time(
        state.facts["administration"], lambda f: attributes_as(f, AdministrationAttributes).when
    )
    if administered:
        text = render.administered([f.attributes for f in administered])
        sentences.append(_sentence("medications", text, [f.id for f in administered]))
    return sentences


def _allergies(state: EvidenceState, render: Any) -> list[Sentence]:
    facts = state.facts["allergy"]
    none_known = [
        f
        for f in facts
        if isinstance(f.attributes, AllergyAttributes) and f.attributes.no_known_allergies
    ]
    recorded = [f for f in facts if f not in none_known]
    # One line, as a clinician writes an allergy list.
    sentences = (
        [
            _sentence(
                "allergies",
                render.allergies([f.attributes for f in recorded]),
                [f.id for f in recorded],
            )
        ]
        if recorded
        else []
    )
    # "No known allergies" beside recorded ones (a templated note) is the Needs review
    # conflict, said once there, never a line of the list that contradicts it.
    if none_known and not sentences:
        sentences.append(
            _sentence(
                "allergies",
                render.none_known(none_known[0].attributes),
                [none_known[0].id],  # the statement quoted; other notes repeat a template
            )
        )
    return sentences


_FLAG_ORDER = ("critical high", "critical low", "high", "low", "abnormal")


def _worst(results: Sequence[LabResultAttributes]) -> str | None:
    flags = {r.flag for r in results}
    return next((flag for flag in _FLAG_ORDER if flag in flags), None)


def _last_moment(taken: datetime | None, stay: Fact | None) -> str:
    """ "discharge" for values taken in the last day of the stay; otherwise they are only the
    latest, and a reader must see that they are older."""
    end = stay.attributes.end if stay and isinstance(stay.attributes, EncounterAttributes) else None
    if taken is None or end is None or aware(end) - aware(taken) > DISCHARGE_WINDOW:
        return "latest"
    return "discharge"


def _vital_signs(facts: list[Fact], render: Any) -> list[Sentence]:
    """The first set of vital signs of the episode (the last is the condition at discharge's;
    a stay with one set shows it there only, each fact cited once)."""
    timed = _by_time([f for f in facts if _effective(f) is not None], _effective)
    if not timed or _effective(timed[0]) == _effective(timed[-1]):
        return []
    taken = _effective(timed[0])
    same = [f for f in timed if _effective(f) == taken]
    text = render.vital_signs("admission", taken, [f.attributes for f in same])
    return [_sentence("results", text, [f.id for f in same])]


def _results(
    state: EvidenceState, render: Any, ranges: CodeTable, stay: Fact | None
) -> list[Sentence]:
    """Abnormal results first (critical, then high or low), each marked, with its trend over the
    episode and against the latest value before admission; the normal ones in one line, without
    screening scores and indices (``minor_results``); vital signs at admission and at discharge
    (or the latest, dated, when none was taken in the stay's last day)."""
    minor = ranges.extra.get("minor_results", {})
    by_test: dict[str, list[Fact]] = defaultdict(list)
    baselines: dict[str, Fact] = {}
    vitals: list[Fact] = []
    for fact in state.facts["lab_result"]:
        result = fact.attributes
        assert isinstance(result, LabResultAttributes)
        key = (
            f"{result.code.code if result.code and result.code.code else result.name}|{result.unit}"
        )
        if result.baseline:
            baselines[key] = fact
        elif is_vital_sign(result):
            vitals.append(fact)
        else:
            by_test[key].append(fact)
    abnormal: list[tuple[int, str, Sentence]] = []
    normal: list[Fact] = []
    unranged: list[Fact] = []
    for key, facts in by_test.items():
        facts[:] = _by_time(facts, _effective)
        results = [attributes_as(f, LabResultAttributes) for f in facts]
        worst = _worst(results)
        if worst is None:
            if not is_minor(results[-1], minor):
                (normal if any(r.flag == "normal" for r in results) else unranged).extend(facts)
            continue
        before = baselines.get(key)
        cited = [f.id for f in facts] + ([before.id] if before else [])
        text = render.key_result(results, worst, before.attributes if before else None)
        abnormal.append(
            (_FLAG_ORDER.index(worst), results[0].name.lower(), _sentence("results", text, cited))
        )
    sentences = [sentence for _, _, sentence in sorted(abnormal, key=lambda item: item[:2])]
    if normal:
        names = list(dict.fromkeys(attributes_as(f, LabResultAttributes).name for f in normal))
        sentences.append(_sentence("results", render.normal_results(names), [f.id for f in normal]))
    if unranged:
        sentences += [_sentence("results", render.result(f.attributes), [f.id]) for f in unranged]
    imaging = [
        _sentence("results", render.imaging(f.attributes), [f.id])
        for f in _by_time(
            state.facts["imaging"], lambda f: attributes_as(f, ImagingAttributes).started
        )
    ]
    return sentences + imaging + _vital_signs(vitals, render)


def _simple(
    state: EvidenceState, category: FactCategory, section: SectionKey, macro: Any
) -> list[Sentence]:
    return [_sentence(section, macro(f.attributes), [f.id]) for f in state.facts[category]]


# Needs review, most dangerous first: a document about another patient, allergy conflicts,
# therapeutic duplication, medication
# discrepancies, then the rest; data quality last.
SEVERITY = (
    "wrong_patient_document",
    "note_instruction",
    "allergy_conflict",
    "critical_result",
    "acute_kidney_injury",
    "conflict",
    "therapeutic_duplication",
    "regimen_risk",
    "medication_discrepancy",
    "prescribed_not_ordered",
    "home_medication_not_ordered",
    "no_discharge_medications",
    "medication_not_renewed",
    "unexplained_medication_change",
    "medication_phase_unknown",
    "incomplete_medication",
    "document_error",
    "page_unread",
    "fact_rejected",
    "stale_condition",
    "loop_budget_exhausted",
)


def _severity(sentence: Sentence) -> int:
    codes = [flag.code for flag in sentence.flags]
    return min((SEVERITY.index(c) for c in codes if c in SEVERITY), default=len(SEVERITY))


NOTE_STATEMENTS: tuple[FactCategory, ...] = (
    "course",
    "follow_up",
    "medication_list",
    "condition_statement",
)


def _instructions(state: EvidenceState, render: Any) -> list[Sentence]:
    """One line per note statement that addresses an AI rather than the patient's care."""
    lines = []
    for category in NOTE_STATEMENTS:
        for fact in state.facts[category]:
            addressed = instruction_like(getattr(fact.attributes, "text", ""))
            if addressed is None:
                continue
            sentence = _sentence("needs_review", render.instruction(addressed), [fact.id])
            flag = SentenceFlag(code="note_instruction", reason="note text addressed to an AI")
            lines.append(sentence.model_copy(update={"flags": [flag]}))
    return lines


def _needs_review(state: EvidenceState, render: Any, stay_fact: str | None) -> list[Sentence]:
    """One line per flag (incomplete medications grouped by what they lack), most severe first;
    what is not documented at the end."""
    sentences = []
    known = {fact.id for fact in state.all_facts()}
    incomplete: list[ReviewFlag] = []
    for flag in state.flags_for_review:
        if flag.code == "incomplete_medication":
            incomplete.append(flag)
            continue
        # A rejected fact is not evidence: its flag cites the stay instead.
        citations = [f for f in flag.fact_ids if f in known] or ([stay_fact] if stay_fact else [])
        sentence = _sentence("needs_review", render.review(flag.reason + "."), citations)
        sentences.append(
            sentence.model_copy(
                update={"flags": [SentenceFlag(code=flag.code, reason=flag.reason)]}
            )
        )
    if incomplete:  # one cause, one line: the orders that lack part of their dosage
        orders = [tuple(flag.reason.rsplit(": ", 1)) for flag in incomplete]
        text = render.incomplete_medications(orders)
        citations = [fact_id for flag in incomplete for fact_id in flag.fact_ids]
        sentence = _sentence("needs_review", text, citations)
        flag_list = [SentenceFlag(code=flag.code, reason=flag.reason) for flag in incomplete]
        sentences.append(sentence.model_copy(update={"flags": flag_list}))
    sentences += _instructions(state, render)
    sentences.sort(key=_severity)
    missing = [
        SECTION_SPECS[_CATEGORY_SECTIONS[c]].title
        for c in state.missing_fields
        if c in _CATEGORY_SECTIONS
    ]
    if missing and stay_fact:
        sentences.append(_sentence("needs_review", render.not_documented(missing), [stay_fact]))
    return sentences


# Sections whose facts the record dates: empty because the record starts later, it says so.
_DATED_SECTIONS: dict[SectionKey, tuple[str, str]] = {
    "procedures": ("procedure", "procedures"),
    "results": ("lab_result", "laboratory results"),
}


def _empty_reason(key: SectionKey, state: EvidenceState, render: Any) -> str:
    """ "Not documented", or that the available record holds none before a later year."""
    stay = state.stay()
    kind, what = _DATED_SECTIONS.get(key, ("", ""))
    begins = state.record_begins.get(kind)
    ended = (stay.end or stay.start) if stay is not None else None
    if begins is None or ended is None or aware(begins) <= aware(ended):
        return NOT_DOCUMENTED
    return str(render.record_starts_later(what, begins))


def summarize_evidence(
    state: EvidenceState,
    *,
    ratio: float = 0.5,
    salience: TokenSalience | None = None,
    settings: PipelineSettings,
) -> Summary:
    """The evidence-only discharge summary of a validated evidence state, checked, under the
    deployment's settings (its clinical tables among them: never defaults in their place)."""
    render = macros("summary/sentences.txt.j2")
    stay_fact = next(
        (
            f.id
            for f in state.facts["encounter"]
            if isinstance(f.attributes, EncounterAttributes) and f.attributes.kind == "stay"
        ),
        None,
    )
    routine = table("routine_procedures", settings)
    stay = next((f for f in state.facts["encounter"] if f.id == stay_fact), None)
    built: dict[SectionKey, list[Sentence]] = {
        "needs_review": _needs_review(state, render, stay_fact),
        "stay": _stay(state, render),
        "diagnoses": _diagnoses(state, render),
        "active_problems": _active_problems(state, render),
        "social_history": _social_history(state, render),
        "hospital_course": _structured_course(state, render, routine, stay)
        + _hospital_course(state, salience, ratio, render),
        "condition_at_discharge": _condition_at_discharge(state, render, stay),
        "procedures": _procedures(state, render, routine),
        "medications": _medications(state, render),
        "allergies": _allergies(state, render),
        "results": _results(state, render, table("reference_ranges", settings), stay),
        "pending_results": _simple(state, "pending_result", "pending_results", render.pending),
        "follow_up": _simple(state, "care_plan", "follow_up", render.care_plan)
        + _simple(state, "follow_up", "follow_up", render.quote),
    }
    sections = [
        SummarySection(
            key=spec.key,
            sentences=check_summary_sentences(built[spec.key], state),
            empty_reason=None if built[spec.key] else _empty_reason(spec.key, state, render),
        )
        for spec in SECTIONS
    ]
    return Summary(
        patient=state.patient,
        encounter=state.encounter,
        sections=sections,
        backend=BACKEND,
        backend_version=BACKEND_VERSION,
    )
