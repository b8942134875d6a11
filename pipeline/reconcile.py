"""Medication reconciliation: admission list against discharge list, computed in code.

Matching is by RxNorm code first, then by ingredient name (:func:`pipeline.medications.drug_key`),
so "Simvastatin 20 MG Oral Tablet" at admission and "simvastatin 40 mg" at discharge are one drug
whose strength changed. An admission medication with no discharge order is *continued* when its
request is still active and *stopped* when its request was stopped or completed during the stay.
A change or stop with no documented reason is flagged for a physician; the system never guesses one.
"""

from __future__ import annotations

from pipeline.evidence import (
    EvidenceState,
    Fact,
    MedicationAttributes,
    MedicationChange,
    MedicationLists,
    ReviewFlag,
    stable_id,
)
from pipeline.medications import drug_key, normalise_frequency, normalise_quantity, normalise_route

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


def reconcile_medications(facts: list[Fact]) -> tuple[MedicationLists, list[ReviewFlag]]:
    medications = [fact for fact in facts if fact.category == "medication"]
    admission = [fact for fact in medications if medication(fact).phase == "admission"]
    unmatched = [fact for fact in medications if medication(fact).phase == "discharge"]
    changes: list[MedicationChange] = []
    discharge_ids: list[str] = []
    for admitted in admission:
        before = medication(admitted)
        match = _find_match(admitted, unmatched)
        if match is not None:
            unmatched.remove(match)
            after = medication(match)
            found = differences(before, after)
            discharge_ids.append(match.id)
            changes.append(
                MedicationChange(
                    kind="changed" if found else "continued",
                    name=after.name,
                    admission=admitted.id,
                    discharge=match.id,
                    differences=found,
                    reason=after.reason or before.reason,
                )
            )
        elif before.status in ACTIVE_STATUSES:
            discharge_ids.append(admitted.id)
            changes.append(
                MedicationChange(
                    kind="continued", name=before.name, admission=admitted.id, discharge=admitted.id
                )
            )
        else:
            changes.append(
                MedicationChange(
                    kind="stopped", name=before.name, admission=admitted.id, reason=before.reason
                )
            )
    for ordered in unmatched:
        discharge_ids.append(ordered.id)
        changes.append(
            MedicationChange(
                kind="new",
                name=medication(ordered).name,
                discharge=ordered.id,
                reason=medication(ordered).reason,
            )
        )
    lists = MedicationLists(
        admission=[fact.id for fact in admission], discharge=discharge_ids, changes=changes
    )
    return lists, _unexplained(changes)


def _unexplained(changes: list[MedicationChange]) -> list[ReviewFlag]:
    flags = []
    for change in changes:
        if change.kind not in {"changed", "stopped"} or change.reason:
            continue
        fact_ids = [fact_id for fact_id in (change.admission, change.discharge) if fact_id]
        what = "; ".join(change.differences) if change.differences else "stopped"
        flags.append(
            ReviewFlag(
                id=stable_id("flag", "unexplained", *fact_ids),
                code="unexplained_medication_change",
                reason=f"{change.name}: {what}, with no documented reason",
                raised_by="reconcile",
                fact_ids=fact_ids,
            )
        )
    return flags


def reconcile(state: EvidenceState) -> tuple[EvidenceState, str]:
    lists, flags = reconcile_medications(state.all_facts())
    kept = [flag for flag in state.flags_for_review if flag.raised_by != "reconcile"]
    counts = {
        kind: sum(c.kind == kind for c in lists.changes)
        for kind in ("new", "changed", "stopped", "continued")
    }
    detail = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    updated = state.model_copy(update={"medications": lists, "flags_for_review": kept + flags})
    return updated, f"reconciled {len(lists.admission)} admission medications: {detail}"
