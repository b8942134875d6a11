"""The day's opioid dose going home, in morphine milligram equivalents (MME), and naloxone.

CDC's 2022 opioid guideline (recommendation 8) offers naloxone to a patient at increased risk of
overdose, dosages of 50 MME a day or more among them; its table converts each opioid to MME
(``opioid_mme``). Each opioid going home, to confirm, or at home with no discharge order is
counted: its strength times the dose units a day of its order, or, for a home drug with no order,
of its last ended prescription (``fhir_mapping.prescriptions``); a fentanyl patch by its
micrograms an hour. A dose the record does not give counts for nothing, so the total is never
more than the record shows. At or above the line, with no rescue drug going home, one Needs
review line names the drugs and says the total, a fact computed in code, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from pipeline.clinical.note_medications import last_prescribed
from pipeline.clinical.risk_flags import having, risk_flag, words
from pipeline.clinical.strengths import strength
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    ComputedAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    PrescriptionAttributes,
    ReviewFlag,
    attributes_as,
    stable_id,
)


def _part_with(name: str, ingredient: str) -> str:
    """The part of a combination's name that holds ``ingredient`` ("acetaminophen 325 MG /
    oxycodone 10 MG": "oxycodone 10 MG")."""
    parts = re.split(r"\s/\s", re.sub(r"\[[^\]]*\]", " ", name))
    return next((p for p in parts if ingredient in words(p)), name)


def _amount(part: str) -> tuple[float, str] | None:
    """The strength a part of a name states, in canonical units: (10.0, "mg"), (0.025,
    "mg/hr")."""
    canonical = strength(part)
    if canonical is None:
        return None
    value, _, unit = canonical.partition(" ")
    return float(value), unit


def _daily_mme(name: str, units: float | None, mme: CodeTable) -> float | None:
    """A drug's MME a day; None when it holds no opioid of the table, 0.0 when the record gives
    no dose to count (its strength or its units a day)."""
    found = _amount(name)
    if "fentanyl" in words(name) and found is not None and found[1] == "mg/hr":
        return found[0] * 1000 * float(mme.extra["transdermal_fentanyl_factor"])
    for ingredient, factor in mme.extra["factors"].items():
        if ingredient in words(name):
            amount = _amount(_part_with(name, ingredient))
            if amount is None or amount[1] != "mg" or units is None:
                return 0.0
            return amount[0] * units * float(factor)
    return None


def _counted(state: EvidenceState, drug: Fact, mme: CodeTable) -> tuple[float, list[Fact]]:
    """One drug's MME a day (0.0 when the record gives no dose), and the facts it rests on."""
    medication = attributes_as(drug, MedicationAttributes)
    units, cited = medication.units_per_day, [drug]
    if units is None and (last := last_prescribed(state, medication.name)) is not None:
        units, cited = attributes_as(last, PrescriptionAttributes).units_per_day, [drug, last]
    return _daily_mme(medication.name, units, mme) or 0.0, cited


def opioid_dose_flags(
    state: EvidenceState, going_home: Sequence[Fact], mme: CodeTable
) -> tuple[list[ReviewFlag], list[Fact]]:
    """One line when the opioids' day total reaches the table's line with no rescue drug, and
    the total as a computed fact that the line cites: every number of a line is checked against
    its cited facts (MA-RAG), so the sum is computed here, kept with the sources of the orders
    and prescriptions it was counted from, and said ("about 135 morphine milligram equivalents
    a day"): readers worked it out by hand from the drugs' lines."""
    opioids = [
        f
        for f in going_home
        if _daily_mme(attributes_as(f, MedicationAttributes).name, None, mme) is not None
    ]
    if not opioids or having(going_home, mme.extra["rescue"]):
        return [], []
    counted = [_counted(state, f, mme) for f in opioids]
    total = sum(amount for amount, _ in counted)
    if total < mme.extra["naloxone_from_mme"]:
        return [], []
    inputs = list({f.id: f for _, facts in counted for f in facts}.values())
    value = Decimal(round(total))
    computed = _day_total(value, inputs)
    # Worded with no drug, year or number the cited facts do not hold (the checker reads every
    # line against them), but for the rescue drug said to be absent, which it lets pass.
    reason = (
        f"Opioids going home or at home: about {value} morphine milligram "
        "equivalents a day, counted from their orders or last prescriptions, at or above the "
        "day's dose from which the CDC opioid guideline offers an overdose rescue drug: "
        f"{'; '.join(attributes_as(f, MedicationAttributes).name for f in opioids)}"
        "; no naloxone or other rescue drug going home: confirm the doses and the rescue drug, "
        "or say why not"
    )
    return [risk_flag("opioid-mme", reason, [computed, *inputs])], [computed]


def _day_total(value: Decimal, inputs: Sequence[Fact]) -> Fact:
    """The day's opioid dose as a fact computed from ``inputs``, with their sources."""
    sources = list(
        {source.model_dump_json(): source for f in inputs for source in f.sources}.values()
    )
    return Fact(
        id=stable_id("computed", "opioid-mme", *(f.id for f in inputs)),
        category="computed",
        attributes=ComputedAttributes(
            name="opioid dose a day",
            value=value,
            unit="morphine milligram equivalents",
            method="CDC 2022 conversion factors: strength times dose units a day of each order, "
            "or of its last prescription",
        ),
        sources=sources,
    )
