"""Follow-up: the care plans, appointments and orders for after discharge, the home medical
equipment, the notes' words on follow-up, and, where all of it began before the stay, that
nothing new is documented; after an operation, or a condition whose guideline asks for a review,
with no review arranged, a line that says so."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.episode_diagnoses import listed
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.clinical.transplant import graft_follow_up
from pipeline.evidence.model import (
    CarePlanAttributes,
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    attributes_as,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import (
    by_time,
    cited_sentence,
    each_procedure_once,
    home_equipment,
    performed,
    procedure_code_and_name,
)
from pipeline.summarizing.sections.operations import operations_of_episode

# What arranges a review after discharge; a care plan's instructions (rest, wound care) do not.
_ARRANGED = frozenset({"appointment", "service_request"})


def follow_up_section(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable, CodeTable, CodeTable],
) -> list[Sentence]:
    """Each plan once, then the notes' follow-up lines quoted. A section that holds only plans
    begun before the stay reads as the plan for after it; a readmission's draft offered a care
    plan of the year before as its follow-up. So when nothing is dated from the stay on and no
    note speaks of follow-up, the section says so, citing the plans it read. ``tables``: the
    home equipment, the routine procedures, the follow-up each condition asks for and the
    transplanted organs."""
    equipment, routine, reviews, organs = tables
    plans = state.facts["care_plan"]
    sentences = [cited_sentence("follow_up", render.care_plan(f.attributes), [f.id]) for f in plans]
    sentences += [
        cited_sentence("follow_up", render.quote(f.attributes), [f.id])
        for f in state.facts["follow_up"]
    ]
    ongoing_only = all(
        isinstance(f.attributes, CarePlanAttributes) and f.attributes.before_stay for f in plans
    )
    if plans and ongoing_only and not state.facts["follow_up"]:
        text = render.no_new_follow_up()
        sentences.append(cited_sentence("follow_up", text, [f.id for f in plans]))
    sentences += _education_given(state, render, routine)
    sentences += _self_care(state, render, reviews)
    if _review_arranged(state):
        return sentences + _equipment_line(state, render, equipment)
    return (
        sentences
        + _post_operative_review(state, render, routine, organs)
        + _condition_reviews(state, render, reviews)
        + _equipment_line(state, render, equipment)
    )


def _education_given(state: EvidenceState, render: Any, routine: CodeTable) -> list[Sentence]:
    """The self-care education the episode gave (the routine table's ``education_keywords``:
    heart failure education), on one line: the discharge teaches the patient to manage the
    condition at home (42 CFR 482.43(b); 2022 AHA/ACC/HFSA heart failure guideline, self-care
    education, class 1), and three readers missed it, which the routine-procedure table keeps
    out of Procedures."""
    words = routine.extra.get("education_keywords", [])
    taught = [
        f
        for f in by_time(state.facts["procedure"], performed)
        if any(word in procedure_code_and_name(f)[1].lower() for word in words)
    ]
    if not taught:
        return []
    given = each_procedure_once(taught)
    cited = [fact_id for p in given for fact_id in p.fact_ids]
    return [cited_sentence("follow_up", render.education_given(given), cited)]


def _review_arranged(state: EvidenceState) -> bool:
    """An appointment or referral on record, or a note's word on follow-up."""
    return bool(state.facts["follow_up"]) or any(
        isinstance(f.attributes, CarePlanAttributes) and f.attributes.kind in _ARRANGED
        for f in state.facts["care_plan"]
    )


def _post_operative_review(
    state: EvidenceState, render: Any, routine: CodeTable, organs: CodeTable
) -> list[Sentence]:
    """An operation in this stay (recorded, or implied by a "History of" coded in it) and no
    review arranged: no appointment or referral on record and no note's word on follow-up.
    Discharge after surgery says who reviews the patient, and when (42 CFR 482.43(c), the
    discharge plan's follow-up; Royal College of Surgeons, Good Surgical Practice 2014, 1.3).
    Readers had to add it to every surgical draft; the record cannot say it, so the line says
    it is missing and what to arrange; after a transplant, with how often the guideline
    measures the graft's function until then (a reader missed the transplant clinic's
    creatinine schedule). Like every "Not documented", it is no flag: the signer adds the
    review, and a flag would only ask to acknowledge the line."""
    operations = operations_of_episode(state, routine)
    if not operations:
        return []
    schedules = graft_follow_up([name for name, *_ in operations], organs)
    text = render.no_post_operative_review(
        [(name, when) for name, when, _ in operations], schedules
    )
    cited = [fact_id for *_, fact_ids in operations for fact_id in fact_ids]
    return [cited_sentence("follow_up", text, cited)]


def _condition_reviews(state: EvidenceState, render: Any, reviews: CodeTable) -> list[Sentence]:
    """A diagnosis of this stay (its principal, or one made in the episode) whose guideline asks
    the discharge to arrange a review (the ``condition_follow_up`` table: a cardiology review
    and cardiac rehabilitation after an infarction, a review within seven days after heart
    failure, continuing treatment after withdrawal management), with none arranged: one line
    each, naming the first diagnosis that shows it and what to arrange. Readers added these by
    hand to every infarction, heart failure and detoxification draft; like the post-operative
    line, it states a missing element and is no flag. Where the table says a care plan is the
    answer (addiction counselling the patient returns to), a plan for the condition is."""
    diagnoses = listed(state, "principal", "specified", "episode")
    sentences = []
    for rule in reviews.extra["conditions"].values():
        showing = _first_named(diagnoses, rule)
        if showing and not (rule.get("answered_by_plan") and _planned_for(state, rule)):
            named = attributes_as(showing, DiagnosisAttributes).display
            text = render.no_condition_review(named, rule["review"])
            sentences.append(cited_sentence("follow_up", text, [showing.id]))
    return sentences


def _self_care(state: EvidenceState, render: Any, reviews: CodeTable) -> list[Sentence]:
    """A condition on the problem list, or of the episode, that limits self-care at home (the
    ``condition_follow_up`` table's ``self_care``: dementia), one line each, whatever review is
    arranged: the discharge plan weighs the patient's capacity for self-care (42 CFR 482.43(a)),
    and two readers of a kidney recipient with Alzheimer's disease asked who would manage a
    complex new regimen."""
    diagnoses = listed(state, "principal", "specified", "episode", "active")
    sentences = []
    for rule in reviews.extra.get("self_care", {}).values():
        showing = _first_named(diagnoses, rule)
        if showing:
            named = attributes_as(showing, DiagnosisAttributes).display
            text = render.self_care(named, rule["ask"])
            sentences.append(cited_sentence("follow_up", text, [showing.id]))
    return sentences


def _first_named(diagnoses: list[Fact], rule: dict[str, Any]) -> Fact | None:
    """The first of ``diagnoses`` whose term the rule names: the one its line names and cites."""
    return next(
        (f for f in diagnoses if names_it(attributes_as(f, DiagnosisAttributes).display, rule)),
        None,
    )


def _planned_for(state: EvidenceState, rule: dict[str, Any]) -> bool:
    """Whether a care plan of the record addresses the condition the rule names."""
    return any(
        names_it(problem, rule)
        for f in state.facts["care_plan"]
        for problem in attributes_as(f, CarePlanAttributes).addresses
    )


def _equipment_line(state: EvidenceState, render: Any, equipment: CodeTable) -> list[Sentence]:
    """The home medical equipment recorded for this stay, on one line (42 CFR 482.43: the
    discharge plan covers the patient's equipment; what the stay supplied for it is the
    course's)."""
    on_record = home_equipment(state, equipment)[0]
    if not on_record:
        return []
    text = render.home_equipment([f.attributes for f in on_record])
    return [cited_sentence("follow_up", text, [f.id for f in on_record])]
