"""Medication reconciliation: admission list against discharge list, computed in code.

Matching is by RxNorm code first, then by ingredient name
(:func:`pipeline.clinical.medications.drug_key`), so "Simvastatin 20 MG Oral Tablet" at admission
and "simvastatin 40 mg" at discharge are one drug whose strength changed. An admission medication
with no discharge order is *continued* when its request is still active and *stopped* when its
request was stopped or completed during the stay. A change or stop with no documented reason is
flagged for a physician; the system never guesses one.

An order of the stay for a drug ordered within the renewal window before admission (its earlier
order completed, as yearly renewals are) is a renewal: *continued*, not new.

An order's status says what the EHR last recorded, not what the patient takes: an order still
"active" that was last written longer ago than the renewal window (12 months by default) before
admission, and that no note of the stay mentions, is *unconfirmed*, never continued: it is
listed with the date it was last ordered and flagged once, for the physician to confirm. So is
an active order that the stay's own home medication list leaves out ("No Active Medications"
beside active orders): the note and the order disagree, and only the physician can say which is
right (the list's flag names the orders it leaves out).

A home drug that no discharge order carries (a MedicationStatement, or a drug an H&P's
medication list names) is *held or stopped?*: never dropped silently, never decided. A drug a
note of the stay prescribes that no discharge order carries is *prescribed, not ordered*, never
"not continued at discharge" (pipeline.clinical.note_medications reads the notes' lists). A home
drug released by a device a clinician placed (an intrauterine system, an implant) is *in place*:
no order holds or stops it, only its removal does.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import get_args

from pipeline.clinical.medications import (
    drug_key,
    normalise_frequency,
    normalise_quantity,
    normalise_route,
)
from pipeline.clinical.note_medications import NotedDrug, noted_drugs, taken_at_home
from pipeline.clinical.reconcile_flags import left_out_flags, not_renewed, unexplained
from pipeline.clinical.stay_context import StayContext, stay_context
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    MedicationAttributes,
    MedicationChange,
    MedicationChangeKind,
    MedicationLists,
    ReviewFlag,
)
from pipeline.settings import RENEWAL_WINDOW

ACTIVE_STATUSES = frozenset({"active", "on-hold"})


RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"


def medication(fact: Fact) -> MedicationAttributes:
    if not isinstance(fact.attributes, MedicationAttributes):
        raise TypeError(f"{fact.id} is not a medication")
    return fact.attributes


def rxnorm_code(attributes: MedicationAttributes) -> str | None:
    code = attributes.code
    return code.code if code is not None and code.system == RXNORM else None


def dose_signature(attributes: MedicationAttributes) -> tuple[str | None, ...]:
    """What must agree for two orders of one drug to be the same regimen."""
    return (
        normalise_quantity(attributes.strength),
        normalise_quantity(attributes.dose),
        normalise_frequency(attributes.frequency),
        normalise_route(attributes.route),
    )


def differences(before: MedicationAttributes, after: MedicationAttributes) -> list[str]:
    """Documented differences only: a value missing on either side is not a change."""
    labels = ("strength", "dose", "frequency", "route")
    raw_before = (before.strength, before.dose, before.frequency, before.route)
    raw_after = (after.strength, after.dose, after.frequency, after.route)
    found = []
    for label, left, right, shown_left, shown_right in zip(
        labels, dose_signature(before), dose_signature(after), raw_before, raw_after, strict=True
    ):
        if left is not None and right is not None and left != right:
            found.append(f"{label}: {shown_left} → {shown_right}")
    return found


def _same_drug(left: MedicationAttributes, right: MedicationAttributes) -> bool:
    left_code, right_code = rxnorm_code(left), rxnorm_code(right)
    if left_code is not None and left_code == right_code:
        return True
    return drug_key(left.name) == drug_key(right.name)


def _find_match(admitted: Fact, candidates: list[Fact]) -> Fact | None:
    attributes = medication(admitted)
    by_code = [
        fact
        for fact in candidates
        if rxnorm_code(attributes) is not None
        and rxnorm_code(medication(fact)) == rxnorm_code(attributes)
    ]
    if by_code:
        return by_code[0]
    by_name = [fact for fact in candidates if _same_drug(attributes, medication(fact))]
    return by_name[0] if by_name else None


def _admission_change(admitted: Fact, unmatched: list[Fact], stay: StayContext) -> MedicationChange:
    """What became of one admission medication; its discharge order, when found, is taken out of
    ``unmatched`` (what is left there is new at discharge)."""
    before = medication(admitted)
    match = _find_match(admitted, unmatched)
    if match is not None:
        unmatched.remove(match)
        after = medication(match)
        found = differences(before, after)
        return MedicationChange(
            kind="changed" if found else "continued",
            name=after.name,
            admission=admitted.id,
            discharge=match.id,
            differences=found,
            reason=after.reason or before.reason,
        )
    if before.recorded_as == "statement":
        return MedicationChange(kind="held_or_stopped", name=before.name, admission=admitted.id)
    if before.status in ACTIVE_STATUSES and stay.stale(before):
        return MedicationChange(kind="unconfirmed", name=before.name, admission=admitted.id)
    if before.status in ACTIVE_STATUSES and stay.home_list and stay.left_off_home_list(before):
        return MedicationChange(
            kind="not_on_home_list",
            name=before.name,
            admission=admitted.id,
            noted=stay.home_list[0],
        )
    if before.status in ACTIVE_STATUSES:
        return MedicationChange(
            kind="continued", name=before.name, admission=admitted.id, discharge=admitted.id
        )
    return MedicationChange(
        kind="stopped", name=before.name, admission=admitted.id, reason=before.reason
    )


def reconcile_medications(
    facts: list[Fact], stay: StayContext | None = None
) -> tuple[MedicationLists, list[ReviewFlag]]:
    stay = stay or StayContext()
    medications = [fact for fact in facts if fact.category == "medication"]
    admission = [fact for fact in medications if medication(fact).phase == "admission"]
    unmatched = [fact for fact in medications if medication(fact).phase == "discharge"]
    changes = [_admission_change(admitted, unmatched, stay) for admitted in admission]
    for ordered in unmatched:
        attributes = medication(ordered)
        changes.append(
            MedicationChange(
                kind="continued" if stay.renewed(attributes) else "new",
                name=attributes.name,
                discharge=ordered.id,
                reason=attributes.reason,
            )
        )
    # In the order they are listed: the admission list's drugs kept, then the new orders.
    discharge_ids = [change.discharge for change in changes if change.discharge is not None]
    home = [d for d in noted_drugs(facts, "home") if taken_at_home(facts, d)]
    changes = [_in_place(c) for c in _home_drugs_left_out(changes, home)]
    given = [fact for fact in medications if medication(fact).phase == "inpatient"]
    changes += _prescribed_not_ordered(changes, noted_drugs(facts, "prescribed"), given)
    lists = MedicationLists(
        admission=[fact.id for fact in admission], discharge=discharge_ids, changes=changes
    )
    return lists, unexplained(changes) + not_renewed(changes) + left_out_flags(changes)


_ORDERED_AT_DISCHARGE = frozenset({"continued", "new", "changed"})


def _home_drugs_left_out(
    changes: list[MedicationChange], home: list[NotedDrug]
) -> list[MedicationChange]:
    """The changes with each home drug of a note that no line names yet as held or stopped
    (one line per drug: a note's drug that a statement already names joins that line)."""
    updated = list(changes)
    for drug in home:
        index = next((i for i, c in enumerate(updated) if drug.matches(c.name)), None)
        if index is None:
            updated.append(
                MedicationChange(kind="held_or_stopped", name=drug.text, noted=drug.line.id)
            )
        elif updated[index].kind == "held_or_stopped" and updated[index].noted is None:
            updated[index] = updated[index].model_copy(update={"noted": drug.line.id})
    return updated


# Dose forms that a clinician places and removes: the drug is given for years, with no order.
PLACED_DEVICE = re.compile(r"\bintrauterine\b|\bimplant\b", re.IGNORECASE)


def _in_place(change: MedicationChange) -> MedicationChange:
    if change.kind == "held_or_stopped" and PLACED_DEVICE.search(change.name):
        return change.model_copy(update={"kind": "in_place"})
    return change


def _prescribed_not_ordered(
    changes: list[MedicationChange], prescribed: list[NotedDrug], given: list[Fact]
) -> list[MedicationChange]:
    """A drug a note of the stay prescribes that no order carries at discharge, with the
    stay's own orders of it (given, completed: never "not continued" while a note prescribes it)."""
    found = []
    for drug in prescribed:
        if any(c.kind in _ORDERED_AT_DISCHARGE and drug.matches(c.name) for c in changes):
            continue
        orders = [fact.id for fact in given if drug.matches(medication(fact).name)]
        found.append(
            MedicationChange(
                kind="prescribed_not_ordered",
                name=drug.text,
                noted=drug.line.id,
                stay_orders=orders,
            )
        )
    return found


def reconcile(
    state: EvidenceState, renewal_window: timedelta = RENEWAL_WINDOW
) -> tuple[EvidenceState, str]:
    lists, flags = reconcile_medications(state.all_facts(), stay_context(state, renewal_window))
    kept = [flag for flag in state.flags_for_review if flag.raised_by != "reconcile"]
    counts = {
        kind: sum(c.kind == kind for c in lists.changes) for kind in get_args(MedicationChangeKind)
    }
    detail = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    updated = state.model_copy(update={"medications": lists, "flags_for_review": kept + flags})
    return updated, f"reconciled {len(lists.admission)} admission medications: {detail}"
