"""The stay: who, when, why, the active problems and the social history (the discharge
diagnoses are ``pipeline.summarizing.sections.diagnoses``)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from pipeline.clinical.episode_diagnoses import listed
from pipeline.clinical.kidney_function import KidneyFunction, kidney_function, outside_stage
from pipeline.clinical.problem_measures import measure_below
from pipeline.clinical.relevant_history import bearing_history, is_past_event, past_event_name
from pipeline.clinical.screening import NegativeScreen, latest_negative
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    NarrativeAttributes,
    attributes_as,
    aware,
)
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.summarizing.sections.common import cited_sentence
from pipeline.text.rendering import plain_term

# A note's line that only restates who the patient is ("Ana is a 65 year-old hispanic female.")
# belongs to the header, which says it from the record; templated notes repeat it in every note.
DEMOGRAPHIC_LINE = re.compile(
    r"^[\w'’.-]+(?: [\w'’.-]+){0,3} is an? \d{1,3}[- ]year[- ]old\b[^.;:]*\.?$", re.IGNORECASE
)

# "quit smoking at age 16": a statement about the patient at an age, which cannot be true of a
# patient who is younger at this stay (templated notes write it regardless).
AT_AGE = re.compile(r"\bat (?:the )?age (?:of )?(\d{1,3})\b", re.IGNORECASE)

# A templated chief complaint that says nothing ("No complaints.") is not a complaint.
NOTHING_SAID = frozenset({"no complaints", "no complaint", "none", "n/a", "not applicable"})


def stay_section(state: EvidenceState, render: Any) -> list[Sentence]:
    sentences = []
    # Each complaint once, however many notes state it, and all of them on one line.
    complaints: dict[str, Fact] = {}
    for fact in state.facts["patient_info"]:
        sentences.append(cited_sentence("stay", render.patient(fact.attributes), [fact.id]))
    for fact in state.facts["encounter"]:
        stay = fact.attributes
        assert isinstance(stay, EncounterAttributes)
        if stay.kind == "chief_complaint":
            said = (stay.text or "").strip()
            if said.lower().rstrip(".") not in NOTHING_SAID:
                complaints.setdefault(said.lower(), fact)
            continue
        sentences.append(cited_sentence("stay", render.stay(stay), [fact.id]))
        if stay.joined:
            sentences.append(cited_sentence("stay", render.joined(stay), [fact.id]))
        if stay.recent_acute_care:
            sentences.append(cited_sentence("stay", render.recent_acute_care(stay), [fact.id]))
        if stay.reasons:
            sentences.append(cited_sentence("stay", render.reasons(stay), [fact.id]))
        if stay.attending:
            sentences.append(cited_sentence("stay", render.attending(stay), [fact.id]))
    return sentences + _complaint_line(state, render, complaints)


def _complaint_line(
    state: EvidenceState, render: Any, complaints: dict[str, Fact]
) -> list[Sentence]:
    """The chief complaints of the stay's notes that are new to this stay, on one line. A
    complaint in the same words as the patient's latest note before the episode is template
    text carried from visit to visit ("Blurred vision" in every note since 2010, beside a heart
    attack): readers read it as what brought the patient in, and called it misleading beside the
    stay's coded reason, so it is left out where the stay codes a reason or a principal
    diagnosis. When the stay codes neither, the carried complaint is all there is: said, in
    words that say where it comes from, and flagged to confirm."""
    before = {said.lower().rstrip(".") for said in state.complaints_before}
    carried = [f for key, f in complaints.items() if key.rstrip(".") in before]
    own = [f for f in complaints.values() if f not in carried]
    stay = state.stay()
    coded = [*stay.reasons, *stay.arranged_reasons] if stay is not None else []
    if own or not carried or coded or listed(state, "principal"):
        return [_complaints(render, own, repeated=False)] if own else []
    noted = state.complaints_noted_on
    reason = (
        "the same words as the patient's note of "
        f"{noted.date().isoformat() if noted else 'a date not documented'}, written before this "
        "stay, and the stay codes no reason of its own: confirm what brought the patient in"
    )
    flag = SentenceFlag(code="carried_forward", reason=reason)
    return [_complaints(render, carried, repeated=True).model_copy(update={"flags": [flag]})]


def _complaints(render: Any, facts: list[Fact], repeated: bool) -> Sentence:
    said = [(attributes_as(f, EncounterAttributes).text or "").strip() for f in facts]
    return cited_sentence("stay", render.chief_complaints(said, repeated), [f.id for f in facts])


def active_problems_section(
    state: EvidenceState, render: Any, tables: tuple[CodeTable, CodeTable, CodeTable, CodeTable]
) -> list[Sentence]:
    """The problem list at discharge. A problem that is the stay's own coded reason and was
    resolved in it ("Sterilization requested", resolved the day of the ligation) is the
    diagnoses' line: under this heading it would read as still active. A "History of X" (SNOMED
    CT's past-history situations: "History of appendectomy", "Past pregnancy history of
    miscarriage") records a past event, not a problem under care: all of them share one
    past-history line at the end, where a physician keeps the surgical history, instead of a
    line each among the active problems; one that bears on the principal diagnosis is said on
    its line instead (``pipeline.clinical.relevant_history``). An older entry that is none of
    the ``chronic`` conditions (:func:`_older_entry`) shares one line, named and dated, before
    it. A stage of chronic kidney disease that the current eGFR (``regimen_risks``: recorded, or
    computed from creatinine) puts outside its range says so, with that eGFR; so does a problem
    whose defining measure reads below it (``pipeline.clinical.problem_measures``: obesity
    beside a body mass index of 27). ``tables``: chronic conditions, regimen risks, relevant
    history, problem measures."""
    chronic, risks, relevant, measures = tables
    stay = state.stay()
    coded = [*stay.reasons, *stay.arranged_reasons] if stay else []
    reasons = {plain_term(reason).lower() for reason in coded}
    problems = [
        f
        for f in listed(state, "active")
        if not (
            attributes_as(f, DiagnosisAttributes).abatement
            and plain_term(attributes_as(f, DiagnosisAttributes).display).lower() in reasons
        )
    ]
    bearing = bearing_history(state, relevant)
    problems = [f for f in problems if f not in bearing]
    past = [f for f in problems if is_past_event(attributes_as(f, DiagnosisAttributes))]
    older = [
        f
        for f in problems
        if f not in past and _older_entry(attributes_as(f, DiagnosisAttributes), stay, chronic)
    ]
    kidneys = kidney_function(state, risks)
    sentences = [
        _problem_line(state, f, render, (kidneys, measures))
        for f in problems
        if f not in past and f not in older
    ]
    if older:
        text = render.older_problems([f.attributes for f in older])
        sentences.append(cited_sentence("active_problems", text, [f.id for f in older]))
    if past:
        events = [
            (past_event_name(f.attributes), f.attributes.onset)
            for f in past
            if isinstance(f.attributes, DiagnosisAttributes)
        ]
        text = render.past_history(events)
        sentences.append(cited_sentence("active_problems", text, [f.id for f in past]))
    return sentences


def _older_entry(
    problem: DiagnosisAttributes, stay: EncounterAttributes | None, chronic: CodeTable
) -> bool:
    """Whether an active problem is an older entry: recorded before the table's
    ``recent_within_days`` ahead of the admission and none of the chronic conditions that shape
    care after discharge (the CMS Chronic Conditions Warehouse's). A chronic sinusitis coded at
    a childhood visit in 1942 and impacted molars of 1990, each on a line of its own beside a
    heart attack, read to readers as noise that hid the problems that matter. A resolved
    problem, one this episode made "Status post", or one with no date keeps its own line."""
    if problem.abatement or problem.status_post:
        return False
    code = problem.code.code if problem.code else None
    return _recorded_before(
        problem.onset, stay, chronic.extra["recent_within_days"]
    ) and not chronic.matches(code, problem.display)


def _recorded_before(onset: datetime | None, stay: EncounterAttributes | None, days: int) -> bool:
    """Whether a finding was recorded more than ``days`` before the admission; one with no
    date, or a stay with none, cannot be said to be (the line that shows it is kept)."""
    if onset is None or stay is None or stay.start is None:
        return False
    return aware(onset) < aware(stay.start) - timedelta(days=int(days))


def social_history_section(
    state: EvidenceState, render: Any, tables: tuple[CodeTable, CodeTable]
) -> list[Sentence]:
    """One short line of the coded social findings that bear on discharge planning (the social
    table's ``at_discharge_keywords``: housing, transport, safety, isolation…; never education
    or a criminal record) and are current: recorded within the table's ``current_within_days``
    before admission (the AHC social-needs tool is repeated yearly; readers deleted "Housing
    unsatisfactory (recorded 2006-06-29)" from a 2024 discharge as noise), or, for a finding of
    interpersonal safety (``current_while_active``), still active, with the latest negative
    screen for it since where it is older (``tables``: social findings, screening scores). Then
    what the notes' Social History says of substance use, quoted, each statement once."""
    social_table, screening = tables
    relevant = social_table.extra["at_discharge_keywords"]
    window = social_table.extra["current_within_days"]
    stay = state.stay()
    shown: list[tuple[Fact, NegativeScreen | None]] = []
    for fact in listed(state, "social"):
        finding = attributes_as(fact, DiagnosisAttributes)
        if not any(word in finding.display.lower() for word in relevant):
            continue
        stale = _recorded_before(finding.onset, stay, window)
        screens_for = _safety_screened_for(finding, social_table)
        if stale and screens_for is None:
            continue
        if stale and screens_for is not None:
            shown.append((fact, latest_negative(state, screening, screens_for, finding.onset)))
        else:
            shown.append((fact, None))
    sentences = []
    if shown:
        text = render.social([(f.attributes, later) for f, later in shown])
        cited = [i for f, later in shown for i in (f.id, later.fact.id if later else None) if i]
        sentences.append(cited_sentence("social_history", text, cited))
    return sentences + _substance_use_quotes(state, render, social_table)


def _problem_line(
    state: EvidenceState, fact: Fact, render: Any, checks: tuple[KidneyFunction | None, CodeTable]
) -> Sentence:
    """One active problem, with the current eGFR where it is outside the problem's kidney
    stage (four readers found "Chronic kidney disease stage 2" beside an eGFR of 26), or with
    its defining measure's latest value where that reads below it. ``checks``: the current
    kidney function, the problem measures."""
    kidneys, measures = checks
    problem = attributes_as(fact, DiagnosisAttributes)
    if kidneys is not None and outside_stage(problem.display, kidneys):
        text = render.problem(problem, kidneys.described)
        return cited_sentence("active_problems", text, [fact.id, *(f.id for f in kidneys.facts)])
    below = measure_below(state, problem.display, measures)
    if below is not None:
        text = render.problem(
            problem, measure=(below.measure, below.fact.attributes, below.at_least)
        )
        return cited_sentence("active_problems", text, [fact.id, below.fact.id])
    return cited_sentence("active_problems", render.problem(problem), [fact.id])


def _substance_use_quotes(
    state: EvidenceState, render: Any, social_table: CodeTable
) -> list[Sentence]:
    """What the notes' Social History says of substance use, quoted, each statement once
    (templated notes repeat it): "Dependent drug abuse" is coded, "a documented history of
    opioid addiction" is what decides naloxone and the pain plan. A statement about an age the
    patient has not reached ("quit smoking at age 16" at 15) is the template's: left out."""
    aged = state.patient_age()
    age = aged[1] if aged else None
    words = social_table.extra["substance_use_words"]
    said: dict[str, Fact] = {}
    for fact in state.facts["social_statement"]:
        quote = attributes_as(fact, NarrativeAttributes).text.strip()
        ages = [int(found) for found in AT_AGE.findall(quote)]
        if age is not None and any(said_age > age for said_age in ages):
            continue
        if any(word in quote.lower() for word in words):
            said.setdefault(quote.lower(), fact)
    return [
        cited_sentence("social_history", render.quote(f.attributes), [f.id]) for f in said.values()
    ]


def _safety_screened_for(finding: DiagnosisAttributes, social_table: CodeTable) -> str | None:
    """What a finding of interpersonal safety the record still holds active is screened as
    (shown whatever its age); None for any other finding."""
    kinds: dict[str, str] = social_table.extra["current_while_active"]
    display = finding.display.lower()
    active = finding.abatement is None and finding.clinical_status in (None, "active", "recurrence")
    return next((kind for word, kind in kinds.items() if word in display), None) if active else None
