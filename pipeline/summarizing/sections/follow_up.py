"""Follow-up: the care plans, appointments and orders for after discharge, the notes' words on
follow-up, and, where all of it began before the stay, that nothing new is documented."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.model import CarePlanAttributes, EvidenceState
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence


def follow_up_section(state: EvidenceState, render: Any) -> list[Sentence]:
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
    return sentences
