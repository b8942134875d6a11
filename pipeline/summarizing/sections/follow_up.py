"""Follow-up: the care plans, appointments and orders for after discharge, the home medical
equipment, the notes' words on follow-up, and, where all of it began before the stay, that
nothing new is documented; after an operation with no review arranged, a line that says so."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import CarePlanAttributes, EvidenceState, Fact
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence, home_equipment
from pipeline.summarizing.sections.history import operations_of_stay

# What arranges a review after discharge; a care plan's instructions (rest, wound care) do not.
_ARRANGED = frozenset({"appointment", "service_request"})


def follow_up_section(
    state: EvidenceState, render: Any, tables: tuple[CodeTable, CodeTable], stay: Fact | None
) -> list[Sentence]:
    """Each plan once, then the notes' follow-up lines quoted. A section that holds only plans
    begun before the stay reads as the plan for after it; a readmission's draft offered a care
    plan of the year before as its follow-up. So when nothing is dated from the stay on and no
    note speaks of follow-up, the section says so, citing the plans it read. ``tables``: the
    home equipment and the routine procedures."""
    equipment, routine = tables
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
    return (
        sentences
        + _post_operative_review(state, render, routine, stay)
        + _equipment_line(state, render, equipment)
    )


def _post_operative_review(
    state: EvidenceState, render: Any, routine: CodeTable, stay: Fact | None
) -> list[Sentence]:
    """An operation in this stay (recorded, or implied by a "History of" coded in it) and no
    review arranged: no appointment or referral on record and no note's word on follow-up.
    Discharge after surgery says who reviews the patient, and when (42 CFR 482.43(c), the
    discharge plan's follow-up; Royal College of Surgeons, Good Surgical Practice 2014, 1.3).
    Readers had to add it to every surgical draft; the record cannot say it, so the line says
    it is missing and what to arrange. Like every "Not documented", it is no flag: the signer
    adds the review, and a flag would only ask to acknowledge the line."""
    arranged = any(
        isinstance(f.attributes, CarePlanAttributes) and f.attributes.kind in _ARRANGED
        for f in state.facts["care_plan"]
    )
    if arranged or state.facts["follow_up"]:
        return []
    operations = operations_of_stay(state, routine, stay)
    if not operations:
        return []
    text = render.no_post_operative_review([(name, when) for name, when, _ in operations])
    cited = [fact_id for *_, fact_ids in operations for fact_id in fact_ids]
    return [cited_sentence("follow_up", text, cited)]


def _equipment_line(state: EvidenceState, render: Any, equipment: CodeTable) -> list[Sentence]:
    """The home medical equipment recorded for this stay, on one line (42 CFR 482.43: the
    discharge plan covers the patient's equipment; what the stay supplied for it is the
    course's)."""
    on_record = home_equipment(state, equipment)[0]
    if not on_record:
        return []
    text = render.home_equipment([f.attributes for f in on_record])
    return [cited_sentence("follow_up", text, [f.id for f in on_record])]
