"""Results read as a clinician reads them: a reference range, an interpretation, a precision.

Each numeric result gets a range (the Observation's own ``referenceRange``, else the shipped adult
default for its LOINC code and unit, ``reference_ranges`` table) and a flag: normal, high, low,
critical high or critical low. A value is shown at the analyte's precision from the table, else
at no more than four significant digits ("4.65 mg/dL", never "4.6483"); the citation keeps the
stored value. A critical value is flagged for the physician, and so is a rise in creatinine that
meets KDIGO's criteria for acute kidney injury (``acute_kidney_injury`` table): the values are
there to read, but nothing else in the record says that the kidneys failed during the stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pipeline.clinical.discharge_instability import unstable_at_discharge
from pipeline.clinical.tables import CodeTable, table
from pipeline.evidence.mapped import RECENT_RESULTS_DAYS
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    ResultFlag,
    ReviewFlag,
    attributes_as,
    aware,
)
from pipeline.settings import PipelineSettings

SIGNIFICANT_DIGITS = 4
NEVER = datetime.min.replace(tzinfo=UTC)
# The FHIR R4 vital-signs profile's codes (observation-vitalsigns), and pain severity, which
# Synthea and many EHRs record as a vital sign. An Observation filed under the vital-signs
# category with another code (an NT-proBNP, say) is a result, never "a vital sign at discharge".
VITAL_SIGN_CODES = frozenset(
    {
        "85353-1",
        "9279-1",
        "8867-4",
        "2708-6",
        "59408-5",
        "8310-5",
        "8302-2",
        "9843-4",
        "29463-7",
        "39156-5",
        "85354-9",
        "8480-6",
        "8462-4",
        "72514-3",
    }
)
_INTERPRETATION_CODES: dict[str, ResultFlag] = {
    "N": "normal",
    "H": "high",
    "L": "low",
    "HH": "critical high",
    "LL": "critical low",
    "A": "abnormal",
    "AA": "abnormal",
}
ABNORMAL = frozenset({"high", "low", "critical high", "critical low", "abnormal"})
CRITICAL = frozenset({"critical high", "critical low"})


def shown(value: Decimal, decimals: int | None = None) -> str:
    """A value at the given decimals, else at no more than four significant digits."""
    if decimals is None:
        digits = value.adjusted() + 1
        decimals = max(0, SIGNIFICANT_DIGITS - digits)
        rounded = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
        text = format(rounded, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return format(value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP), "f")


def _outside(value: Decimal, text: str, low: Decimal | None, high: Decimal | None) -> str:
    """The shown value with more decimals, while rounding would put it inside its range."""
    decimals = len(text.partition(".")[2])
    while (
        (low is None or Decimal(text) >= low)
        and (high is None or Decimal(text) <= high)
        and decimals < 4
    ):
        decimals += 1
        text = shown(value, decimals)
    return text


def _decimal(value: Any) -> Decimal | None:
    return Decimal(str(value)) if value is not None else None


def _same_unit(left: str | None, right: str | None) -> bool:
    return (left or "").lower().replace(" ", "") == (right or "").lower().replace(" ", "")


def _in_units(default: dict[str, Any], unit: str | None) -> bool:
    """Whether a result in ``unit`` is in the default's unit, however the source spells it."""
    return any(_same_unit(known, unit) for known in default.get("units", [default.get("unit")]))


def interpret(
    result: LabResultAttributes, ranges: dict[str, dict[str, Any]], gender: str | None = None
) -> LabResultAttributes:
    """The result with its shown value, range (own, else the adult default, the patient's sex's
    where the table gives one: a haemoglobin of 16.1 g/dL is high in a woman, and read as
    normal against a range for both sexes) and flag."""
    default = ranges.get(result.code.code if result.code and result.code.code else "", {})
    default = default | default.get(gender or "", {})
    if default and not _in_units(default, result.unit):
        default = {}  # another unit: the default's numbers do not apply
    update: dict[str, Any] = {}
    low, high = result.reference_low, result.reference_high
    if low is not None or high is not None:
        update["range_source"] = "observation"
    elif default and ("low" in default or "high" in default):
        low, high = _decimal(default.get("low")), _decimal(default.get("high"))
        update |= {"reference_low": low, "reference_high": high, "range_source": "adult default"}
    value = result.value
    if value is not None:
        update["shown_value"] = shown(value, default.get("decimals"))
        critical_low = _decimal(default.get("critical_low"))
        critical_high = _decimal(default.get("critical_high"))
        flag: ResultFlag | None = None
        if critical_low is not None and value < critical_low:
            flag = "critical low"
        elif critical_high is not None and value > critical_high:
            flag = "critical high"
        elif low is not None and value < low:
            flag = "low"
        elif high is not None and value > high:
            flag = "high"
        elif low is not None or high is not None:
            flag = "normal"
        update["flag"] = flag
        if flag in ABNORMAL:  # never round an abnormal value back into its range
            update["shown_value"] = _outside(value, update["shown_value"], low, high)
    if update.get("flag") is None and result.interpretation:
        update["flag"] = _INTERPRETATION_CODES.get(result.interpretation.strip().upper())
    return result.model_copy(update=update)


def _categories(result: LabResultAttributes) -> set[str]:
    """The Observation's categories (mapped as one comma-separated text)."""
    return {kind.strip() for kind in (result.observation_category or "").split(",")}


def is_vital_sign(result: LabResultAttributes) -> bool:
    """A vital sign: filed as one, under a vital sign's code (or no code at all)."""
    if "vital-signs" not in _categories(result):
        return False
    return result.code is None or result.code.code is None or result.code.code in VITAL_SIGN_CODES


def read_as_recent(state: EvidenceState, result: LabResultAttributes) -> bool:
    """A laboratory result of the days before admission in which any test is still the current
    value (``RECENT_RESULTS_DAYS``): a results line's, whatever problem it bears on too."""
    stay = state.stay()
    if is_vital_sign(result) or stay is None or stay.start is None or result.effective is None:
        return False
    return aware(result.effective) >= aware(stay.start) - timedelta(days=RECENT_RESULTS_DAYS)


def is_minor(result: LabResultAttributes, minor: dict[str, Any]) -> bool:
    """A screening score or derived index (``minor_results`` in the ranges table)."""
    code = result.code.code if result.code is not None else None
    kinds = set(minor.get("categories", []))
    return code in minor.get("codes", {}) or bool(_categories(result) & kinds)


def kidney_injury(facts: Sequence[Fact], criteria: CodeTable) -> ReviewFlag | None:
    """The first rise in serum creatinine during the stay that meets KDIGO's criteria for acute
    kidney injury (an earlier value of the stay, or the baseline before it, against a later value
    of the stay), as a flag that names both values with their dates; else None. The flag states
    no threshold or interval: every number a draft states must be one of its evidence's."""
    unit = criteria.extra["unit"]
    absolute = Decimal(str(criteria.extra["absolute_rise"]))
    absolute_window = timedelta(hours=criteria.extra["absolute_window_hours"])
    relative = Decimal(str(criteria.extra["relative_rise"]))
    relative_window = timedelta(days=criteria.extra["relative_window_days"])
    # A value from before the stay is the baseline: within its own, longer window.
    baseline_window = timedelta(days=criteria.extra.get("baseline_window_days", 0))
    measured: list[tuple[datetime, Decimal, Fact, bool]] = []
    for fact in facts:
        result = fact.attributes
        if (
            isinstance(result, LabResultAttributes)
            and result.code is not None
            and result.code.code in criteria.codes
            and _same_unit(result.unit, unit)
            and result.value is not None
            and result.effective is not None
        ):
            measured.append((result.effective, result.value, fact, result.baseline))
    measured.sort(key=lambda row: row[0])
    for index, (later_at, later_value, later_fact, baseline) in enumerate(measured):
        if baseline:
            continue
        for earlier_at, earlier_value, earlier_fact, before_stay in measured[:index]:
            elapsed = later_at - earlier_at
            window = max(relative_window, baseline_window) if before_stay else relative_window
            if elapsed <= absolute_window and later_value - earlier_value >= absolute:
                criterion = "absolute rise"
            elif elapsed <= window and later_value >= relative * earlier_value > 0:
                criterion = "relative rise"
            else:
                continue
            return ReviewFlag.on_facts(
                ("acute_kidney_injury",),
                "acute_kidney_injury",
                (
                    f"Acute kidney injury by KDIGO creatinine criteria ({criterion}): creatinine "
                    f"{shown(earlier_value, 2)} {unit} on {earlier_at.date().isoformat()} → "
                    f"{shown(later_value, 2)} {unit} on {later_at.date().isoformat()}: confirm "
                    "the diagnosis and plan follow-up of renal function"
                ),
                "results",
                [earlier_fact.id, later_fact.id],
            )
    return None


def _at(result: LabResultAttributes) -> str:
    when = result.effective.date().isoformat() if result.effective else "date unknown"
    return f"{result.shown_value}{' ' + result.unit if result.unit else ''} on {when}"


def critical_flags(facts: Sequence[Fact]) -> list[ReviewFlag]:
    """One flag per analyte with a critical value in the stay: the value, or the first and the
    last when it recurred (six days of the same low saturation are one question, not six)."""
    by_analyte: dict[str, list[Fact]] = {}
    for fact in facts:
        result = fact.attributes
        if (
            isinstance(result, LabResultAttributes)
            and result.flag in CRITICAL
            and not result.baseline
        ):
            by_analyte.setdefault(result.name, []).append(fact)
    flags = []
    for name, found in by_analyte.items():
        found.sort(key=lambda f: aware(attributes_as(f, LabResultAttributes).effective or NEVER))
        first = attributes_as(found[0], LabResultAttributes)
        last = attributes_as(found[-1], LabResultAttributes)
        said = _at(first) if len(found) == 1 else f"first {_at(first)}, last {_at(last)}"
        flags.append(
            ReviewFlag.on_facts(
                ("critical",),
                "critical_result",
                f"Critical result: {name}{':' if len(found) > 1 else ''} {said}",
                "results",
                [f.id for f in found],
            )
        )
    return flags


def interpret_results(state: EvidenceState, settings: PipelineSettings) -> EvidenceState:
    """Every result interpreted; a critical value of the stay, a kidney injury and vital signs
    unstable at discharge flagged for the physician."""
    ranges = table("reference_ranges", settings).extra["ranges"]
    gender = state.patient_gender()
    facts = [
        fact.model_copy(update={"attributes": interpret(fact.attributes, ranges, gender)})
        if isinstance(fact.attributes, LabResultAttributes)
        else fact
        for fact in state.facts.get("lab_result", [])
    ]
    flags = [flag for flag in state.flags_for_review if flag.raised_by != "results"]
    flags += critical_flags(facts)
    injury = kidney_injury(facts, table("acute_kidney_injury", settings))
    if injury is not None:
        flags.append(injury)
    flags += unstable_at_discharge(state, facts, table("discharge_instability", settings))
    return state.model_copy(
        update={"facts": dict(state.facts) | {"lab_result": facts}, "flags_for_review": flags}
    )
