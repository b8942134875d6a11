"""What the episode gave: the stay's orders not continued at discharge and the doses it
administered, each drug once, with a readmission's earlier stay's on lines of their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.clinical.medications import drug_key
from pipeline.evidence.model import (
    AdministrationAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import (
    by_time,
    cited_sentence,
    earlier_stay_end,
    earlier_stay_of,
    split_at,
)


def given_in_periods(state: EvidenceState) -> tuple[list[Fact], list[Fact]]:
    """The doses administered in this episode, split into an earlier stay's (an inpatient stay
    of the episode that ended before this one began) and this stay's."""
    administered = by_time(
        state.facts["administration"], lambda f: attributes_as(f, AdministrationAttributes).when
    )
    return split_at(
        earlier_stay_end(state),
        administered,
        lambda f: attributes_as(f, AdministrationAttributes).when,
    )


def given_lines(state: EvidenceState, render: Any) -> list[Sentence]:
    """What the stay gave, each drug once with its number of doses, and the stay's orders that
    were not continued at discharge: an order whose drug was given is said on the drug's line
    (four lines for one furosemide injection, two per stay, were noise); a readmission's earlier
    stay's on lines of their own, never credited to this stay."""
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
    earlier_orders, own_orders = split_at(
        earlier_stay_end(state), given, lambda f: attributes_as(f, MedicationAttributes).authored_on
    )
    periods = zip(
        ((earlier_stay_of(state), earlier_orders), (None, own_orders)),
        given_in_periods(state),
        strict=True,
    )
    sentences = []
    for (in_earlier, orders), doses in periods:
        dosed = {drug_key(attributes_as(f, AdministrationAttributes).name) for f in doses}
        stopped = {drug_key(attributes_as(f, MedicationAttributes).name) for f in orders}
        only_ordered = [
            f for f in orders if drug_key(attributes_as(f, MedicationAttributes).name) not in dosed
        ]
        if only_ordered:
            text = render.given_during_stay([f.attributes for f in only_ordered], in_earlier)
            sentences.append(cited_sentence("medications", text, [f.id for f in only_ordered]))
        if doses:
            text = render.administered(each_drug_once(doses), in_earlier, sorted(stopped))
            cited = [f.id for f in doses] + [f.id for f in orders if f not in only_ordered]
            sentences.append(cited_sentence("medications", text, cited))
    return sentences


@dataclass(frozen=True, slots=True)
class GivenDrug:
    """One drug as the draft says it was given: its first dose, the day of its last when later
    (furosemide twice a day for a week is one entry, not fourteen), and how many doses."""

    first: AdministrationAttributes
    until: str | None
    doses: int
    key: str


def each_drug_once(administered: list[Fact]) -> list[GivenDrug]:
    """Each drug given once, in the order of its first dose."""
    by_name: dict[tuple[str, str], list[AdministrationAttributes]] = {}
    for fact in administered:
        given = attributes_as(fact, AdministrationAttributes)
        by_name.setdefault((given.name, given.kind), []).append(given)
    named = []
    for times in by_name.values():
        first, last = times[0], times[-1]
        later = first.when and last.when and last.when.date() > first.when.date()
        until = last.when.date().isoformat() if later and last.when else None
        named.append(GivenDrug(first, until, len(times), drug_key(first.name)))
    return named
