"""What the reconciliation asks the physician to decide: an unexplained change or stop, orders to
confirm (too old to count as taken), home drugs with no discharge order, and drugs a note
prescribes that no order carries; one flag per question, never a decision."""

from __future__ import annotations

from pipeline.evidence.model import FlagCode, MedicationChange, ReviewFlag


def left_out_flags(changes: list[MedicationChange]) -> list[ReviewFlag]:
    """One flag for the home drugs held or stopped, one for the drugs prescribed in a note but
    not ordered (the medication list names each; the flag says what to decide)."""
    asks: dict[str, tuple[FlagCode, str]] = {
        "held_or_stopped": (
            "home_medication_not_ordered",
            "Home medications with no discharge order: confirm whether each is held or stopped",
        ),
        "prescribed_not_ordered": (
            "prescribed_not_ordered",
            "Prescribed in a note of this episode with no order active at discharge: confirm "
            "whether each continues",
        ),
    }
    flags = []
    for kind, (code, reason) in asks.items():
        cited = [
            fact_id
            for change in changes
            if change.kind == kind
            for fact_id in (change.admission, change.noted, *change.stay_orders)
            if fact_id
        ]
        if cited:
            flags.append(ReviewFlag.on_facts((code,), code, reason, "reconcile", cited))
    return flags


def unexplained(changes: list[MedicationChange]) -> list[ReviewFlag]:
    flags = []
    for change in changes:
        if change.kind not in {"changed", "stopped"} or change.reason:
            continue
        fact_ids = [fact_id for fact_id in (change.admission, change.discharge) if fact_id]
        what = "; ".join(change.differences) if change.differences else "stopped"
        flags.append(
            ReviewFlag.on_facts(
                ("unexplained",),
                "unexplained_medication_change",
                f"{change.name}: {what}, with no documented reason",
                "reconcile",
                fact_ids,
            )
        )
    return flags


def not_renewed(changes: list[MedicationChange]) -> list[ReviewFlag]:
    """One flag for all the unconfirmed orders (the medication list names each with its date)."""
    stale = [change for change in changes if change.kind == "unconfirmed" and change.admission]
    if not stale:
        return []
    fact_ids = [change.admission for change in stale if change.admission]
    # No number in the text: every number a draft states must be one of the evidence's.
    return [
        ReviewFlag.on_facts(
            ("not_renewed",),
            "medication_not_renewed",
            (
                "Home orders last written long before admission (beyond the renewal window) "
                "and not mentioned in this stay's notes: confirm whether still taken"
            ),
            "reconcile",
            fact_ids,
        )
    ]
