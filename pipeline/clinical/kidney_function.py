"""Kidney function for drug dosing: the record's eGFR, or the one its creatinine gives.

A laboratory's reported eGFR and the creatinine of the same sample can disagree (a record that
reads "eGFR 70" beside a creatinine of 2.06 mg/dL in a woman of 65, whose CKD-EPI estimate is
about 26). Drug doses follow the kidney function, so the estimate is computed in code from the
latest creatinine with the race-free CKD-EPI 2021 equation (Inker et al., N Engl J Med
2021;385:1737-49; KDIGO 2024 CKD guideline, recommendation 1.2.4.1), and the lower of the two is
the one a dose is reviewed against: the flag says which, with both values, never deciding which
is right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pipeline.clinical.risk_flags import current_results, latest_fact
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    ComputedAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    attributes_as,
    stable_id,
)

# Creatinine in µmol/L over this factor is mg/dL.
MICROMOL_PER_MG_DL = 88.42
GFR_UNIT = "mL/min/1.73 m²"


@dataclass(frozen=True, slots=True)
class KidneyFunction:
    """The eGFR a dose is reviewed against, the results it rests on, and how to say it."""

    value: float
    facts: tuple[Fact, ...]
    described: str
    # The estimate as a fact of its own, where it is the one used: every number of a line is
    # checked against its cited facts (MA-RAG), and this one is computed, not recorded.
    computed: Fact | None = None


def estimated_gfr(creatinine_mg_dl: float, age: int, female: bool) -> float:
    """CKD-EPI 2021 (race-free) eGFR in mL/min/1.73 m² from serum creatinine, age and sex."""
    kappa, alpha = (0.7, -0.241) if female else (0.9, -0.302)
    ratio = creatinine_mg_dl / kappa
    estimate = 142 * min(ratio, 1) ** alpha * max(ratio, 1) ** -1.200 * 0.9938**age
    return float(estimate * (1.012 if female else 1.0))


def kidney_function(state: EvidenceState, risks: CodeTable) -> KidneyFunction | None:
    """The stay's current eGFR as recorded, or as computed from its latest creatinine where that
    is lower; None when the record has neither (or no age and sex to compute with)."""
    recorded = latest_fact(current_results(state, risks.extra["egfr_codes"]))
    creatinine = latest_fact(current_results(state, risks.extra["creatinine_codes"]))
    computed = _computed(state, creatinine) if creatinine is not None else None
    if recorded is None:
        return computed
    value = attributes_as(recorded, LabResultAttributes)
    reported = float(value.value or 0)
    shown = value.shown_value or str(value.value)
    if computed is None or computed.value >= reported:
        described = f"eGFR {shown}{_unit(value)} on {_day(value)}"
        return KidneyFunction(reported, (recorded,), described)
    described = f"{computed.described}; the record's eGFR of {_day(value)} reads {shown}"
    return KidneyFunction(computed.value, (*computed.facts, recorded), described, computed.computed)


# KDIGO 2012 GFR categories (mL/min/1.73 m²): the range of each stage a problem list names.
_STAGE_RANGES = {
    "1": (90.0, float("inf")),
    "2": (60.0, 90.0),
    "3": (30.0, 60.0),
    "3a": (45.0, 60.0),
    "3b": (30.0, 45.0),
    "4": (15.0, 30.0),
    "5": (0.0, 15.0),
}
_CKD_STAGE = re.compile(r"chronic kidney disease,? stage (\d[ab]?)\b", re.IGNORECASE)


def outside_stage(problem: str, kidneys: KidneyFunction) -> bool:
    """Whether a problem naming a stage of chronic kidney disease ("Chronic kidney disease
    stage 2") has a current eGFR outside that stage's KDIGO range: the coded stage is old."""
    found = _CKD_STAGE.search(problem)
    if found is None or found.group(1).lower() not in _STAGE_RANGES:
        return False
    low, high = _STAGE_RANGES[found.group(1).lower()]
    return not low <= kidneys.value < high


def _computed(state: EvidenceState, creatinine: Fact) -> KidneyFunction | None:
    result = attributes_as(creatinine, LabResultAttributes)
    aged, gender = state.patient_age(), state.patient_gender()
    unit = (result.unit or "").replace("μ", "µ").lower()
    # A creatinine of zero or less is a recording error, never a kidney function.
    if result.value is None or result.value <= 0 or aged is None:
        return None
    if gender not in {"female", "male"}:
        return None
    if unit == "mg/dl":
        mg_dl = float(result.value)
    elif unit == "µmol/l":
        mg_dl = float(result.value) / MICROMOL_PER_MG_DL
    else:
        return None
    estimate = estimated_gfr(mg_dl, aged[1], gender == "female")
    fact = Fact(
        id=stable_id("computed", "egfr", creatinine.id),
        category="computed",
        attributes=ComputedAttributes(
            name="estimated glomerular filtration rate",
            value=Decimal(round(estimate)),
            unit=GFR_UNIT,
            method=f"CKD-EPI 2021 from creatinine, age {aged[1]} and sex {gender}",
        ),
        sources=[*creatinine.sources, *aged[0].sources],
    )
    described = (
        f"eGFR about {round(estimate)} {GFR_UNIT}, computed from creatinine "
        f"{result.shown_value or result.value}{_unit(result)} on {_day(result)} (CKD-EPI 2021)"
    )
    return KidneyFunction(estimate, (fact, creatinine), described, fact)


def _unit(result: LabResultAttributes) -> str:
    return f" {result.unit}" if result.unit else ""


def _day(result: LabResultAttributes) -> str:
    return result.effective.date().isoformat() if result.effective else "an unknown date"
