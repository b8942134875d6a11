"""Vital signs unstable at the last measurement before discharge, asked about once.

A heart-failure readmission left with an oxygen saturation of 88 % as its last reading and
nothing after it; the draft printed the value under Condition at discharge and flagged nothing,
and two readers named it. Instability on discharge (a temperature, heart rate, respiratory
rate, systolic pressure or oxygen saturation past the limits of the shipped
``discharge_instability`` table, each at its last measurement) predicts death and readmission
within 30 days (Nguyen et al. 2017, after Halm et al. 2002). One Needs review line names each
such reading with its value and date and asks the physician to confirm the patient is stable to
leave; never a decision, since the record may not hold the last set taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from pipeline.clinical.lab_risks import said_value
from pipeline.clinical.risk_flags import fact_of, latest_of
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import EvidenceState, Fact, LabResultAttributes, ReviewFlag, aware


def _unstable(value: Decimal, criterion: dict[str, Any]) -> bool:
    if "above" in criterion:
        return value > Decimal(str(criterion["above"]))
    if "at_most" in criterion:
        return value <= Decimal(str(criterion["at_most"]))
    return value < Decimal(str(criterion["below"]))


def _of_stay(
    facts: Sequence[Fact], codes: Sequence[str], start: datetime, end: datetime
) -> list[Fact]:
    """The results under ``codes`` taken in the stay, up to discharge."""
    return [
        fact
        for fact in facts
        if isinstance(result := fact.attributes, LabResultAttributes)
        and result.code is not None
        and result.code.code in codes
        and result.effective is not None
        and not result.baseline
        and start <= aware(result.effective) <= end
    ]


def unstable_at_discharge(
    state: EvidenceState, facts: Sequence[Fact], criteria: CodeTable
) -> list[ReviewFlag]:
    """One flag naming every vital sign whose last measurement of the stay meets its
    instability criterion (``facts``: the interpreted results), or none."""
    stay = state.stay()
    if stay is None or stay.start is None or stay.end is None:
        return []
    start, end = aware(stay.start), aware(stay.end)
    found = []
    for criterion in criteria.extra["criteria"]:
        taken = _of_stay(facts, criterion["codes"], start, end)
        last = latest_of(taken)
        # A value in another unit (a temperature in °F) is not compared against the limit.
        if last is None or last.value is None or last.unit != criterion["unit"]:
            continue
        if _unstable(last.value, criterion):
            found.append(fact_of(taken, last))
    if not found:
        return []
    results = [f.attributes for f in found if isinstance(f.attributes, LabResultAttributes)]
    said = "; ".join(said_value(result, result.name) for result in results)
    reason = (
        f"Unstable at the last measurement before discharge: {said}: confirm the patient is "
        "stable to leave, or what is done about it"
    )
    return [
        ReviewFlag.on_facts(
            ("unstable",), "unstable_at_discharge", reason, "results", [f.id for f in found]
        )
    ]
