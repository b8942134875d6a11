"""How an order says a drug is taken: a Dosage and the drug's name read as a clinician writes them
("1 tablet every 6 hours as needed for pain for 5 days, oral"), for orders and statements alike."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from fhir.resources.R4B.dosage import Dosage
from fhir.resources.R4B.timing import Timing

from fhir_mapping.codes import (
    concept_text,
    quantity_text,
)
from pipeline.clinical.medications import route_of_form, strength_of

_UNIT_NAMES = {
    "s": "seconds",
    "min": "minutes",
    "h": "hours",
    "d": "days",
    "wk": "weeks",
    "mo": "months",
    "a": "years",
}


_TIMES = {1: "once", 2: "twice", 3: "three times", 4: "four times"}


_EVERY_ONE = {"d": "daily", "wk": "weekly", "mo": "monthly", "h": "hourly"}


def timing_text(timing: Timing | None) -> str | None:
    """A Timing as a clinician writes it: "twice daily", "every 8 hours", "5 times daily"."""
    if timing is None:
        return None
    if timing.code is not None:
        return concept_text(timing.code)
    repeat = timing.repeat
    if repeat is None or not repeat.frequency or not repeat.period or not repeat.periodUnit:
        return None
    period = counted(repeat.period)
    unit = _UNIT_NAMES.get(repeat.periodUnit, repeat.periodUnit)
    if period == "1" and repeat.periodUnit in _EVERY_ONE:
        times = _TIMES.get(repeat.frequency, f"{repeat.frequency} times")
        return f"{times} {_EVERY_ONE[repeat.periodUnit]}"
    if repeat.frequency == 1:
        return f"every {period} {unit}" if period != "1" else f"every {unit.removesuffix('s')}"
    return f"{repeat.frequency} times every {period} {unit}"


def _duration(dosage: Dosage) -> str | None:
    repeat = dosage.timing.repeat if dosage.timing is not None else None
    bounds = repeat.boundsDuration if repeat is not None else None
    if bounds is None or bounds.value is None:
        return None
    unit = bounds.unit or _UNIT_NAMES.get(bounds.code or "", bounds.code or "")
    return f"for {counted(bounds.value)} {unit}".strip()


def counted(value: Decimal | float | int) -> str:
    """A count as a prescriber writes it: 1.0 → "1", 2.50 → "2.5" (an order's "1.0 every 1.0
    days" is a tablet once daily; unlike a result's, these trailing zeros carry no precision)."""
    return format(Decimal(str(value)).normalize(), "f")


_DOSE_FORMS = ("tablet", "capsule", "puff", "patch", "suppository", "drop")


def _dose_form(name: str) -> str | None:
    """The unit of a bare dose, from the drug's dose form ("… Oral Tablet" → tablet)."""
    lowered = name.lower()
    return next((form for form in _DOSE_FORMS if form in lowered), None)


def _dose(dosage: Dosage, name: str) -> str | None:
    for dose_and_rate in dosage.doseAndRate or []:
        quantity = dose_and_rate.doseQuantity
        if (
            quantity is not None
            and quantity.value is not None
            and not (quantity.unit or quantity.code)
        ):
            form = _dose_form(name)
            amount = counted(quantity.value)
            if form is None:
                return amount
            return f"{amount} {form}" if Decimal(amount) == 1 else f"{amount} {form}s"
        if quantity is not None:
            return quantity_text(quantity)
        if dose_and_rate.doseRange is not None:
            low = quantity_text(dose_and_rate.doseRange.low)
            high = quantity_text(dose_and_rate.doseRange.high)
            return f"{low} to {high}"
    return None


_DAYS_PER_UNIT = {"min": 1 / 1440, "h": 1 / 24, "d": 1.0, "wk": 7.0, "mo": 30.0, "a": 365.0}


def units_per_day(dosage: Dosage | None) -> float | None:
    """The dose units a day the instruction gives (2 tablets 3 times a day: 6), computed from
    the dose quantity and the timing's frequency and period; None where either is missing."""
    if dosage is None or dosage.timing is None or dosage.timing.repeat is None:
        return None
    repeat = dosage.timing.repeat
    days = _DAYS_PER_UNIT.get(repeat.periodUnit or "")
    quantities = [d.doseQuantity for d in dosage.doseAndRate or [] if d.doseQuantity is not None]
    if not (repeat.frequency and repeat.period and days and quantities and quantities[0].value):
        return None
    return float(quantities[0].value) * repeat.frequency / (float(repeat.period) * days)


def dosage_attributes(dosage: Dosage | None, name: str) -> dict[str, Any]:
    """What a Dosage (an order's instruction, a statement's) and the drug's name say of how it
    is taken: strength, dose, frequency, route (the dose form's when no route is given), as
    needed, duration, the instruction's text."""
    ordered_route = concept_text(dosage.route) if dosage else None
    route = ordered_route or route_of_form(name)
    return {
        "strength": strength_of(name),
        "dose": _dose(dosage, name) if dosage else None,
        "frequency": timing_text(dosage.timing) if dosage else None,
        "route": route,
        "route_source": ("order" if ordered_route else "dose form") if route else None,
        "as_needed": bool(dosage.asNeededBoolean or dosage.asNeededCodeableConcept)
        if dosage
        else None,
        "as_needed_for": concept_text(dosage.asNeededCodeableConcept) if dosage else None,
        "duration": _duration(dosage) if dosage else None,
        "dosage_text": dosage.text if dosage else None,
        "units_per_day": units_per_day(dosage),
    }
