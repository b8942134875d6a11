"""Drugs whose safety a laboratory value decides: flagged when the stay's latest value says the
dose or the drug needs review (the ``regimen_risks`` table names the limits and their sources).
Computed in code, flagged, never decided; the flag states the value and its date as recorded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Literal

from pipeline.clinical.kidney_function import kidney_function
from pipeline.clinical.risk_flags import (
    current_results,
    drug_names,
    fact_of,
    having,
    latest_of,
    risk_flag,
    stay_results,
)
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)


def renal_lists(risks: CodeTable) -> tuple[list[str], list[str]]:
    """The drugs kidney function rules out and those it doses. A deployment's table written
    before the two lists has one, ``renal_review``: its drugs keep their dose reviewed."""
    reduce = risks.extra.get("renal_reduce", risks.extra.get("renal_review", []))
    return risks.extra.get("renal_avoid", []), reduce


def renal_dosing(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """Drugs to avoid or to reduce in dose below the table's eGFR limit, against the recorded
    eGFR or the one the latest creatinine gives, whichever is lower (``kidney_function``). A drug
    to avoid is asked to be held or stopped: three readers found "review the dose" of
    alendronate at an eGFR of 26 the wrong instruction, since no dose of it suits that kidney."""
    kidneys = kidney_function(state, risks)
    if kidneys is None or kidneys.value >= risks.extra["renal_limit"]:
        return []
    avoid, reduce = renal_lists(risks)
    to_avoid = having(going_home, avoid)
    to_reduce = [f for f in having(going_home, reduce) if f not in to_avoid]
    if not to_avoid and not to_reduce:
        return []
    asks = []
    if to_avoid:
        each = "it" if len(to_avoid) == 1 else "each"
        asks.append(
            f"{drug_names(to_avoid)}, avoided at this kidney function: hold or stop {each}, "
            f"or say why {each} continues"
        )
    if to_reduce:
        asks.append(f"review the dose of {drug_names(to_reduce)} for kidney function")
    reason = f"{kidneys.described}: {'; '.join(asks)}"
    return [risk_flag("renal", reason, [*kidneys.facts, *to_avoid, *to_reduce])]


def said_value(result: LabResultAttributes, name: str) -> str:
    assert result.value is not None and result.effective is not None
    unit = f" {result.unit}" if result.unit else ""
    value = result.shown_value or str(result.value)
    return f"{name} {value}{unit} on {result.effective.date().isoformat()}"


def _recorded(result: LabResultAttributes) -> str:
    """The value as the record holds it (5.05, not the 5.1 a key result shows): beside a
    level the flag compares it with, the rounding would overstate it."""
    assert result.value is not None
    return format(result.value.normalize(), "f")


def _also_beyond(
    results: Sequence[Fact], latest: LabResultAttributes, level: float, side: str
) -> list[tuple[Fact, LabResultAttributes]]:
    """The other readings of the window beyond the same level, in time order: a pressure of 77
    on three days is not one low reading. A reading taken when the latest was is the same
    sample under another code (a potassium of serum and of blood), not another reading."""
    beyond = []
    for fact in results:
        result = attributes_as(fact, LabResultAttributes)
        if result.value is None or result.effective is None:
            continue
        if result.effective == latest.effective:
            continue
        if (result.value > level) if side == "above" else (result.value < level):
            beyond.append((fact, result))
    return sorted(beyond, key=lambda reading: aware(reading[1].effective or datetime.min))


def _taken(result: LabResultAttributes, day: date) -> str:
    """When a reading was taken, beside the latest one taken on ``day``."""
    assert result.effective is not None
    taken = result.effective.date()
    return "earlier that day" if taken == day else f"on {taken.isoformat()}"


def _review_drugs(
    key: str,
    measure: str,
    reading: tuple[list[Fact], LabResultAttributes, float],
    side: Literal["above", "below"],
    effect: str,
    drugs: list[Fact],
) -> list[ReviewFlag]:
    """One flag over the drugs that act on a measure beyond the table's level for them, with
    the window's other readings beyond it. The level is the table's, not the record's: the flag
    states only the record's numbers, and never calls the value high or low (the laboratory's
    own range may still call it normal)."""
    results, latest, level = reading
    assert latest.effective is not None
    day = latest.effective.date()
    others = _also_beyond(results, latest, level, side)
    also = "; ".join(f"{_recorded(r)} {_taken(r, day)}" for _, r in others)
    unit = f" {latest.unit}" if latest.unit else ""
    reason = (
        f"{measure} {_recorded(latest)}{unit} on {day.isoformat()}"
        f"{f' (also {also})' if also else ''} is {side} the level at which drugs that "
        f"{effect} are reviewed: review {drug_names(drugs)}"
    )
    cited = [fact_of(results, latest), *(fact for fact, _ in others)]
    return [risk_flag(key, reason, [*cited, *drugs])]


def potassium_raising(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """A drug that raises potassium goes home while the latest potassium (the stay's, else the
    week's before it) is above the table's limit."""
    results = current_results(state, risks.extra["potassium_codes"])
    latest = latest_of(results)
    limit = risks.extra["potassium_limit"]
    if latest is None or latest.value is None or latest.value <= limit:
        return []
    raising = having(going_home, risks.extra["potassium_raising"])
    if not raising:
        return []
    reading = (results, latest, limit)
    return _review_drugs("potassium", "Potassium", reading, "above", "raise potassium", raising)


# How the line says what this stay did to the drugs: started, changed, or both.
_STARTED = {
    frozenset({"new"}): "started",
    frozenset({"changed"}): "changed",
    frozenset({"new", "changed"}): "started or changed",
}


def potassium_monitoring(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """A drug that raises potassium started or changed in this stay, with no potassium or no
    creatinine measured in the stay or the days before discharge the table allows: both are
    checked within one to two weeks of the start (the guidelines the table names), and the
    draft asks for it, as it asks for an INR with warfarin."""
    changes = state.medications.changes
    kinds = {c.discharge: c.kind for c in changes if c.kind in {"new", "changed"}}
    drugs = having([f for f in going_home if f.id in kinds], risks.extra["potassium_raising"])
    if not drugs:
        return []
    within = risks.extra["renal_check_within_days"]
    renal = [*risks.extra["creatinine_codes"], *risks.extra["egfr_codes"]]
    # Named as a clinician orders them ("potassium" alone reads as the drug to the checker).
    measured = {
        "renal function": _recent(state, renal, within)[1],
        "electrolytes": _recent(state, risks.extra["potassium_codes"], within)[1],
    }
    missing = [name for name, latest in measured.items() if latest is None]
    if not missing:
        return []
    reason = (
        f"{drug_names(drugs)} {_STARTED[frozenset(kinds[f.id] for f in drugs)]} in this "
        "stay, with no recent "
        f"{' and no recent '.join(missing)} on record: check renal function and electrolytes "
        "within one to two weeks of the start"
    )
    return [risk_flag("potassium-monitoring", reason, drugs)]


def _recent(
    state: EvidenceState, codes: Sequence[str], within_days: int
) -> tuple[list[Fact], LabResultAttributes | None]:
    """The results under ``codes`` up to ``within_days`` before discharge (the stay's, or the
    baseline before it), and the latest of them."""
    stay = state.stay()
    end = aware(stay.end or stay.start or datetime.max) if stay is not None else None
    window = timedelta(days=within_days)
    results = [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and f.attributes.code is not None
        and f.attributes.code.code in codes
        and f.attributes.effective is not None
        and (end is None or end - aware(f.attributes.effective) <= window)
    ]
    return results, latest_of(results)


def low_blood_pressure(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """Drugs that lower blood pressure go home while the latest systolic pressure, of the stay
    or of the days before discharge the table names, is below its floor."""
    lowering = having(going_home, risks.extra["bp_lowering"])
    if not lowering:
        return []
    results, latest = _recent(
        state, risks.extra["systolic_codes"], risks.extra["systolic_within_days"]
    )
    floor = risks.extra["systolic_floor"]
    if latest is None or latest.value is None or latest.value >= floor:
        return []
    measure, reading = "Systolic blood pressure", (results, latest, floor)
    effect = "lower blood pressure"
    return _review_drugs("blood_pressure", measure, reading, "below", effect, lowering)


def _recent_hba1c(
    state: EvidenceState, risks: CodeTable
) -> tuple[list[Fact], LabResultAttributes | None]:
    """The HbA1c results of the months before discharge (a three-month measure)."""
    return _recent(state, risks.extra["hba1c_codes"], risks.extra["hba1c_within_days"])


def _low_glucose(
    state: EvidenceState, risks: CodeTable
) -> tuple[list[Fact], LabResultAttributes | None]:
    """The stay's glucose results, and the lowest one below the table's floor for its unit."""
    results = stay_results(state, risks.extra["glucose_codes"])
    floors = risks.extra["glucose_floor"]
    low = [
        result
        for result in (attributes_as(f, LabResultAttributes) for f in results)
        if result.value is not None and result.unit in floors and result.value < floors[result.unit]
    ]
    return results, min(low, key=lambda r: r.value or 0) if low else None


def hypoglycaemia_risk(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """Insulin or a secretagogue goes home while the latest HbA1c is below the table's floor,
    or a glucose of the stay was below the hypoglycaemia limit."""
    drugs = having(going_home, risks.extra["hypoglycaemic"])
    if not drugs:
        return []
    hba1c_results, hba1c = _recent_hba1c(state, risks)
    glucose_results, glucose = _low_glucose(state, risks)
    floor = risks.extra["hba1c_floor"]
    found: list[str] = []
    cited: list[Fact] = []
    if hba1c is not None and hba1c.value is not None and hba1c.value < floor:
        found.append(
            f"{said_value(hba1c, 'HbA1c')}, below the level at which such drugs are reduced"
        )
        cited.append(fact_of(hba1c_results, hba1c))
    if glucose is not None:
        found.append(f"{said_value(glucose, 'glucose')} in the stay")
        cited.append(fact_of(glucose_results, glucose))
    if not found:
        return []
    reason = (
        f"{drug_names(drugs)} at discharge with {' and '.join(found)}: a risk of "
        "hypoglycaemia; review the dose"
    )
    return [risk_flag("hypoglycaemia", reason, [*cited, *drugs])]
