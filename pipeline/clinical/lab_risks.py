"""Drugs whose safety a laboratory value decides: flagged when the stay's latest value says the
dose or the drug needs review (the ``regimen_risks`` table names the limits and their sources).
Computed in code, flagged, never decided; the flag states the value and its date as recorded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pipeline.clinical.risk_flags import drug_names, having, risk_flag, stay_results
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)


def renal_dosing(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    egfr = [
        f
        for f in stay_results(state, risks.extra["egfr_codes"])
        if attributes_as(f, LabResultAttributes).value is not None
    ]
    if not egfr:
        return []
    latest = max(
        egfr,
        key=lambda f: aware(attributes_as(f, LabResultAttributes).effective or datetime.min),
    )
    result = attributes_as(latest, LabResultAttributes)
    assert result.value is not None and result.effective is not None
    if result.value >= risks.extra["renal_limit"]:
        return []
    to_review = having(going_home, risks.extra["renal_review"])
    if not to_review:
        return []
    shown = result.shown_value or str(result.value)
    unit = f" {result.unit}" if result.unit else ""
    reason = (
        f"eGFR {shown}{unit} on {result.effective.date().isoformat()}: review the dose of "
        f"{drug_names(to_review)} for kidney function"
    )
    return [risk_flag("renal", reason, [latest, *to_review])]
