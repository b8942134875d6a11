"""A drug going home at another strength than the stay's note lists it.

Medication reconciliation compares what the patient takes, as the admission note lists it,
with what is ordered, and resolves each discrepancy, dose included (The Joint Commission,
NPSG.03.06.01; WHO High 5s medication reconciliation SOP). Drugs are matched by ingredient
(``pipeline.clinical.note_medications``); a drug the note lists at a strength that no order of
it going home has ("simvastatin 10 mg" beside a 1994 order of Simvastatin 20 MG) is flagged on
the order, for the physician to say which strength is taken: never chosen.
"""

from __future__ import annotations

from fractions import Fraction

from pipeline.clinical.medications import ingredients, normalise_quantity, strength_of
from pipeline.clinical.note_medications import noted_drugs
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
)

RAISED_BY = "reconcile"


def strength(name: str) -> str | None:
    """The strength a drug's name states, in canonical units ("Simvastatin 20 MG Oral Tablet"
    and "simvastatin 20 mg" both "20 mg"), for comparison only."""
    return normalise_quantity(strength_of(name))


def strength_discrepancy_flags(state: EvidenceState) -> list[ReviewFlag]:
    """Each order going home (or to confirm) whose drug a home list of the stay's notes names
    at a strength that no such order of the drug has."""
    ids = [*state.medications.discharge, *state.medications.unconfirmed()]
    orders = [f for f in map(state.fact, dict.fromkeys(ids)) if f.category == "medication"]
    flags = []
    for drug in noted_drugs(state.facts.get("medication_list", []), "home"):
        listed = strength(drug.text)
        same = [f for f in orders if drug.matches(attributes_as(f, MedicationAttributes).name)]
        stated = [f for f in same if _strength_of(f)]
        if not listed or not stated or any(_strength_of(f) == listed for f in same):
            continue
        flags += [_flag(order, drug.text, drug.line) for order in stated]
    return flags


def strength_fall(
    before: MedicationAttributes, after: MedicationAttributes
) -> tuple[str, str] | None:
    """The strengths of two drugs of one ingredient when the second's is the lower ("24 HR
    metoprolol succinate 100 MG …" and "metoprolol tartrate 25 MG …": 100 mg, 25 mg): a
    duplicate proposed stopped in favour of a weaker tablet is a dose cut, a dose difference
    reconciliation resolves (NPSG.03.06.01), which a reader found the line left unsaid. Where
    both instructions give their tablets a day and the weaker one's make up the daily dose (50
    mg twice a day for 100 mg once), nothing falls."""
    if len(ingredients(before.name)) != 1 or ingredients(before.name) != ingredients(after.name):
        return None
    old, new = strength(before.name), strength(after.name)
    if old is None or new is None or "+" in old or "+" in new:
        return None
    (old_value, old_unit), (new_value, new_unit) = old.split(" ", 1), new.split(" ", 1)
    try:
        falls = old_unit == new_unit and Fraction(new_value) < Fraction(old_value)
    except ValueError:
        return None
    if falls and before.units_per_day and after.units_per_day:
        daily_before = Fraction(old_value) * Fraction(before.units_per_day)
        falls = Fraction(new_value) * Fraction(after.units_per_day) < daily_before
    return (old, new) if falls else None


def _strength_of(fact: Fact) -> str | None:
    return strength(attributes_as(fact, MedicationAttributes).name)


def _flag(order: Fact, listed: str, line: Fact) -> ReviewFlag:
    name = attributes_as(order, MedicationAttributes).name
    reason = (
        f"Strength differs from the stay's note: {name} ordered; the note lists {listed}: "
        "confirm the strength taken"
    )
    return ReviewFlag.on_facts(
        ("strength", order.id), "strength_discrepancy", reason, RAISED_BY, [order.id, line.id]
    )
