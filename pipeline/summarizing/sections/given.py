"""What the episode gave: the stay's orders not continued at discharge and the doses it
administered, each drug once, with a readmission's earlier stay's on lines of their own."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.evidence.model import (
    AdministrationAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    attributes_as,
    aware,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import by_time, cited_sentence


def earlier_stay_end(state: EvidenceState) -> datetime | None:
    """When a readmission's earlier stay (an inpatient stay of the episode that ended before
    this one began) ended: what was given until then was given in that stay, not this one."""
    stay = state.stay()
    if stay is None or stay.start is None:
        return None
    ends = [
        aware(other.end)
        for other in stay.joined
        if other.class_code == "IMP"
        and other.end is not None
        and aware(other.end) <= aware(stay.start)
    ]
    return max(ends, default=None)


def given_lines(state: EvidenceState, render: Any) -> list[Sentence]:
    """What the stay gave and did not continue, and what it administered, each drug once; a
    readmission's earlier stay's on lines of their own, never credited to this stay."""
    # A drug a note prescribes is never "not continued": it has its own line.
    prescribed_orders = {
        i
        for c in state.medications.changes
        if c.kind == "prescribed_not_ordered"
        for i in c.stay_orders
    }
    given = [
        f
        for f in state.facts["medication"]
        if isinstance(f.attributes, MedicationAttributes)
        and f.attributes.phase == "inpatient"
        and f.id not in prescribed_orders
    ]
    administered = by_time(
        state.facts["administration"], lambda f: attributes_as(f, AdministrationAttributes).when
    )
    earlier_end = earlier_stay_end(state)

    def earlier(moment: datetime | None) -> bool:
        return earlier_end is not None and moment is not None and aware(moment) <= earlier_end

    sentences = []
    for in_earlier in (True, False):
        orders = [
            f
            for f in given
            if earlier(attributes_as(f, MedicationAttributes).authored_on) == in_earlier
        ]
        if orders:
            text = render.given_during_stay([f.attributes for f in orders], in_earlier)
            sentences.append(cited_sentence("medications", text, [f.id for f in orders]))
        doses = [
            f
            for f in administered
            if earlier(attributes_as(f, AdministrationAttributes).when) == in_earlier
        ]
        if doses:
            text = render.administered(each_drug_once(doses), in_earlier)
            sentences.append(cited_sentence("medications", text, [f.id for f in doses]))
    return sentences


def each_drug_once(administered: list[Fact]) -> list[tuple[AdministrationAttributes, str | None]]:
    """Each drug given once, at its first time, with the day of its last when later (furosemide
    twice a day for a week is one entry, not fourteen)."""
    by_name: dict[tuple[str, str], list[AdministrationAttributes]] = {}
    for fact in administered:
        given = attributes_as(fact, AdministrationAttributes)
        by_name.setdefault((given.name, given.kind), []).append(given)
    named = []
    for times in by_name.values():
        first, last = times[0], times[-1]
        later = first.when and last.when and last.when.date() > first.when.date()
        named.append((first, last.when.date().isoformat() if later and last.when else None))
    return named
