"""The medication lines of drugs no discharge order carries: orders to confirm (too old, or
left out by the stay's home list), the drugs a note prescribes, the home drugs held or stopped
and the devices in place, one line each, each drug said as the record last said it."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from pipeline.clinical.note_medications import (
    NotedDrug,
    last_prescribed,
    lists_none,
    not_a_home_drug,
    noted_drugs,
)
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    MedicationChange,
    NarrativeAttributes,
    PrescriptionAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import (
    cited_sentence,
    earlier_stay_end,
    earlier_stay_of,
    split_at,
)


def listed_lines(
    state: EvidenceState, render: Any, replaced: dict[str, list[str]]
) -> list[Sentence]:
    """Orders to confirm (too old, or left out by the stay's home list), then the drugs a note
    prescribes, the home drugs held or stopped, and the devices in place: one line each."""
    changes = state.medications.changes
    sentences = []
    stale = [
        state.fact(c.admission)
        for c in changes
        if c.kind == "unconfirmed" and c.admission and c.admission not in replaced
    ]
    if stale:
        # A note of the stay that lists no active medications does mention them: by leaving
        # them out ("not mentioned in its notes" contradicted it).
        none = notes_listing_none(state)
        text = render.not_renewed(
            [f.attributes for f in stale], none[0].attributes if none else None
        )
        cited = [f.id for f in stale] + [f.id for f in none[:1]]
        sentences.append(cited_sentence("medications", text, cited))
    left_off = [c for c in changes if c.kind == "not_on_home_list" and c.admission not in replaced]
    if left_off:
        orders = [state.fact(c.admission) for c in left_off if c.admission]
        text = render.not_on_home_list([f.attributes for f in orders])
        cited = [*(f.id for f in orders), *dict.fromkeys(c.noted for c in left_off if c.noted)]
        sentences.append(cited_sentence("medications", text, cited))
    sentences += _prescribed_not_ordered(state, render)
    sentences += _held_or_stopped(state, render)
    sentences += _not_taken_at_home(state, render)
    in_place = [c for c in changes if c.kind == "in_place"]
    if in_place:
        sentences.append(cited_sentence("medications", render.in_place(in_place), _cited(in_place)))
    return sentences


def _held_or_stopped(state: EvidenceState, render: Any) -> list[Sentence]:
    """The home drugs no discharge order carries, on one line, each with how it was last
    prescribed where an ended prescription of the year before says so (the note lists
    "oxycodone 10 mg" with no dose; the order of the spring said 1 tablet 4 times a day)."""
    listed = [c for c in state.medications.changes if c.kind == "held_or_stopped"]
    if not listed:
        return []
    last = [last_prescribed(state, change.name) for change in listed]
    pairs = [(c, f.attributes if f else None) for c, f in zip(listed, last, strict=True)]
    text = render.held_or_stopped(pairs)
    cited = _cited(listed) + [f.id for f in last if f is not None]
    return [cited_sentence("medications", text, cited)]


def _not_taken_at_home(state: EvidenceState, render: Any) -> list[Sentence]:
    """The drugs of the notes' home lists that are no home drug, said once as what they are: a
    clinician gave it at a visit (a dentist's fluoride gel), or it was a course finished with its
    illness (a cough syrup for a bronchitis). A paired reader read the gel's absence from the
    list as a home drug silently dropped; a whole-round reader read the syrup asked about as a
    home drug as noise."""
    changes = state.medications.changes
    found: dict[str, list[tuple[NotedDrug, Fact]]] = {"office": [], "finished": []}
    for drug in noted_drugs(state.facts["medication_list"], "home"):
        # The reconciliation's own test: a drug it left off the home list for this reason.
        if any(drug.matches(c.name) for c in changes):
            continue
        last = last_prescribed(state, drug.text)
        kind = not_a_home_drug(attributes_as(last, PrescriptionAttributes)) if last else None
        if last is not None and kind is not None:
            found[kind].append((drug, last))
    office, finished = found["office"], found["finished"]
    return [
        cited_sentence(
            "medications",
            line([(drug.text, last.attributes) for drug, last in found]),
            [i for drug, last in found for i in (drug.line.id, last.id)],
        )
        for line, found in ((render.office_treatments, office), (render.finished_courses, finished))
        if found
    ]


def _cited(changes: list[MedicationChange]) -> list[str]:
    return [i for c in changes for i in (c.admission, c.noted, *c.stay_orders) if i]


def _prescribed_not_ordered(state: EvidenceState, render: Any) -> list[Sentence]:
    """The drugs the notes prescribe with no order at discharge: those of a note written in a
    readmission's earlier stay said to be that stay's ("this stay's notes" had named a drug the
    orthopaedic stay prescribed, in the nursing stay that followed it), then this stay's."""
    listed = [c for c in state.medications.changes if c.kind == "prescribed_not_ordered"]
    noted = {c.noted: state.fact(c.noted) for c in listed if c.noted}
    earlier_ids = {
        f.id
        for f in split_at(earlier_stay_end(state), list(noted.values()), partial(_written, state))[
            0
        ]
    }
    earlier = [c for c in listed if c.noted in earlier_ids]
    own = [c for c in listed if c.noted not in earlier_ids]
    return [
        cited_sentence("medications", render.prescribed_not_ordered(group, of), _cited(group))
        for group, of in ((earlier, earlier_stay_of(state)), (own, None))
        if group
    ]


def _written(state: EvidenceState, fact: Fact) -> datetime | None:
    """When the note a line is quoted from was written."""
    ref = next((ref for ref in fact.sources if ref.is_text), None)
    return state.document(ref.document).date if ref is not None and ref.document else None


def notes_listing_none(state: EvidenceState) -> list[Fact]:
    """The lines of the stay's notes' medication lists that say the patient takes none."""
    return [
        f
        for f in state.facts["medication_list"]
        if isinstance(f.attributes, NarrativeAttributes) and lists_none(f.attributes.text)
    ]
