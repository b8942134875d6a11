"""The drugs the list proposes to stop, each on a line of its own, for the physician to confirm:
a drug a guideline says to withdraw in this patient (an NSAID with coronary heart disease or
heart failure; an opioid after an admission for substance use), wherever the reconciliation had
put it (going home, an old order to confirm, a home drug with no discharge order). Readers read
"confirm it is needed" on such a drug, left on its list line, as sending it home."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.model import (
    EvidenceState,
    MedicationAttributes,
    MedicationChange,
    ReviewFlag,
    attributes_as,
)
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.summarizing.sections.common import cited_sentence

STOP_PROPOSED = "stop_proposed"
# A home or prescribed drug read from a note cites the note's medication list, which the list's
# other drugs cite too: such a drug is the flag's only when the flag also names it.
_FROM_NOTES = frozenset({"held_or_stopped", "prescribed_not_ordered"})
# Where the reconciliation had the drug, as the proposal says it.
_WHERE = {
    "new": "ordered in this stay",
    "continued": "continued from the home list",
    "changed": "changed in this stay",
    "not_on_home_list": "ordered before this stay, left out of its home list",
    "held_or_stopped": "at home, with no discharge order",
    "prescribed_not_ordered": "prescribed in a note, with no order",
    "unconfirmed": "last ordered",
}
# A proposal: the change it stops, why (the flag's headline), and the other facts the flag cites
# (the diagnoses that call for the stop).
Proposal = tuple[MedicationChange, str, list[str]]


def _ids(change: MedicationChange) -> set[str]:
    return {i for i in (change.admission, change.discharge, change.noted) if i}


def _named_by(change: MedicationChange, flag: ReviewFlag) -> bool:
    if {change.admission, change.discharge} & set(flag.fact_ids):
        return True
    return (
        change.kind in _FROM_NOTES and change.noted in flag.fact_ids and change.name in flag.reason
    )


def proposed_stops(state: EvidenceState) -> list[Proposal]:
    """Each change a ``stop_proposed`` flag names, with the flag's headline (its first clause)
    and the other facts it cites (the diagnoses that call for the stop)."""
    found = []
    for flag in state.flags_for_review:
        if flag.code != STOP_PROPOSED:
            continue
        named = [c for c in state.medications.changes if _named_by(c, flag)]
        drugs = {i for c in named for i in _ids(c)}
        others = [i for i in flag.fact_ids if i not in drugs]
        headline = flag.reason.split(": ", 1)[0]
        found += [(c, headline, others) for c in named if c.kind in _WHERE]
    return list({id(c): (c, why, others) for c, why, others in found}.values())


def proposed_stop_lines(
    state: EvidenceState, render: Any, proposals: list[Proposal]
) -> list[Sentence]:
    """One line per proposal: the drug, where the reconciliation had it, and why it stops."""
    lines = []
    for change, why, others in proposals:
        ordered_on = None
        if change.kind == "unconfirmed" and change.admission:
            order = attributes_as(state.fact(change.admission), MedicationAttributes)
            ordered_on = order.authored_on
        headline = why[:1].lower() + why[1:]
        text = render.proposed_stop(change.name, _WHERE[change.kind], headline, ordered_on)
        line = cited_sentence("medications", text, [*sorted(_ids(change)), *others])
        # The line says why; its flag asks for the decision the signature needs.
        flag = SentenceFlag(code=STOP_PROPOSED, reason="stop it, or say why it is needed")
        lines.append(line.model_copy(update={"flags": [*line.flags, flag]}))
    return lines
