"""The medication reconciliation's result: the admission and discharge lists, and what became of
each drug between them (``pipeline.clinical.reconcile`` computes it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.evidence.base import StrictModel

# "unconfirmed": an order from before the stay, still active, but last ordered long ago and not
# mentioned in the stay's notes: whether it is still taken is for the physician to confirm.
# "not_on_home_list": an order from before the stay, still active, that the stay's own home
# medication list leaves out: the note and the order disagree, so it is confirmed, not continued.
# "in_place": a home drug released by a device a clinician places and removes (an intrauterine
# system, an implant): it stays in place with no order, so it is never "held or stopped?".

MedicationChangeKind = Literal[
    "new",
    "stopped",
    "changed",
    "continued",
    "unconfirmed",
    "not_on_home_list",
    "held_or_stopped",
    "prescribed_not_ordered",
    "in_place",
]


class MedicationChange(StrictModel):
    kind: MedicationChangeKind
    name: str
    admission: str | None = None
    discharge: str | None = None
    differences: list[str] = Field(default_factory=list)
    reason: str | None = None
    # The line of a note's medication list that names the drug (home or prescribed), or, for an
    # order the stay's home list leaves out, that list's line.
    noted: str | None = None
    # A drug a note prescribes: the stay's own orders of it (none active at discharge).
    stay_orders: list[str] = Field(default_factory=list)


_TO_CONFIRM = frozenset({"unconfirmed", "not_on_home_list"})


class MedicationLists(StrictModel):
    admission: list[str] = Field(default_factory=list)
    discharge: list[str] = Field(default_factory=list)
    changes: list[MedicationChange] = Field(default_factory=list)

    def held_at_home(self) -> list[str]:
        """The home drugs with no discharge order ("held or stopped?"): at home, so they may
        still be taken, and every rule about what the patient takes counts them."""
        return [c.admission for c in self.changes if c.kind == "held_or_stopped" and c.admission]

    def unconfirmed(self) -> list[str]:
        """The orders to confirm (too old to count as taken, or left out by the stay's home
        list): every rule about what the patient takes leaves them out; their own flag asks
        about them."""
        return [c.admission for c in self.changes if c.kind in _TO_CONFIRM and c.admission]
