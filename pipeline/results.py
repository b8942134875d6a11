"""Results read as a clinician reads them: a reference range, an interpretation, a precision.

Each numeric result gets a range (the Observation's own ``referenceRange``, else the shipped adult
default for its LOINC code and unit, ``reference_ranges`` table) and a flag: normal, high, low,
critical high or critical low. A value is shown at the analyte's precision from the table, else
at no more than four significant digits ("4.65 mg/dL", never "4.6483"); the citation keeps the
stored value. A critical value is flagged for the physician.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pipeline.evidence import EvidenceState, LabResultAttributes, ResultFlag, ReviewFlag, stable_id
from pipeline.settings import PipelineSettings
from pipeline.tables import table

SIGNIFICANT_DIGITS = 4
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


def interpret(
    result: LabResultAttributes, ranges: dict[str, dict[str, Any]]
) -> LabResultAttributes:
    """The result with its shown value, range (own, else the adult default) and flag."""
    default = ranges.get(result.code.code if result.code and result.code.code else "", {})
    if default and not _same_unit(default.get("unit"), result.unit):
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


def interpret_results(state: EvidenceState, settings: PipelineSettings) -> EvidenceState:
    """Every result interpreted; a critical value of the stay flagged for the physician."""
    ranges = table("reference_ranges", settings).extra["ranges"]
    facts = []
    flags = [flag for flag in state.flags_for_review if flag.raised_by != "results"]
    for fact in state.facts.get("lab_result", []):
        if not isinstance(fact.attributes, LabResultAttributes):
            facts.append(fact)
            continue
        result = interpret(fact.attributes, ranges)
        facts.append(fact.model_copy(update={"attributes": result}))
        if result.flag in CRITICAL and not result.baseline:
            when = result.effective.date().isoformat() if result.effective else "date unknown"
            flags.append(
                ReviewFlag(
                    id=stable_id("flag", "critical", fact.id),
                    code="critical_result",
                    reason=f"Critical result: {result.name} {result.shown_value}"
                    f"{' ' + result.unit if result.unit else ''} on {when}",
                    raised_by="results",
                    fact_ids=[fact.id],
                )
            )
    return state.model_copy(
        update={"facts": dict(state.facts) | {"lab_result": facts}, "flags_for_review": flags}
    )
