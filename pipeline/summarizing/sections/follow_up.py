"""Follow-up: the care plans, appointments and orders for after discharge, the home medical
equipment, the notes' words on follow-up, and, where all of it began before the stay, that
nothing new is documented."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import CarePlanAttributes, EvidenceState
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence, home_equipment


def follow_up_section(state: EvidenceState, render: Any, equipment: CodeTable) -> list[Sentence]:
    """Each plan once, then the notes' follow-up lines quoted. A section that holds only plans
    begun before the stay reads as the plan for after it; a readmission's draft offered a care
    plan of the year before as its follow-up. So when nothing is dated from the stay on and no
    note speaks of follow-up, the section says so, citing the plans it read."""
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
    return sentences + _equipment_line(state, render, equipment)


def _equipment_line(state: EvidenceState, render: Any, equipment: CodeTable) -> list[Sentence]:
    """The home medical equipment recorded for this stay, on one line (42 CFR 482.43: the
    discharge plan covers the patient's equipment; what the stay supplied for it is the
    course's)."""
    on_record = home_equipment(state, equipment)[0]
    if not on_record:
        return []
    text = render.home_equipment([f.attributes for f in on_record])
    return [cited_sentence("follow_up", text, [f.id for f in on_record])]
