"""Normalised forms used to compare medications: spelling and units never make a false change."""

from __future__ import annotations

import pytest

from pipeline.clinical.medications import (
    drug_key,
    normalise_frequency,
    normalise_quantity,
    normalise_route,
    strength_of,
)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("10 mg", "10mg"),
        ("10 MG", "10 mg"),
        ("1 g", "1000 mg"),
        ("250 mcg", "0.25 mg"),
        ("0.5 mg", ".5 mg"),
        ("5 UNT/ML", "5 units/mL"),
    ],
)
def test_equal_quantities_normalise_alike(left: str, right: str) -> None:
    assert normalise_quantity(left) == normalise_quantity(right)


def test_different_quantities_stay_different() -> None:
    assert normalise_quantity("10 mg") != normalise_quantity("100 mg")
    assert normalise_quantity("10 mg") != normalise_quantity("10 mcg")


@pytest.mark.parametrize(
    ("text", "per_day"),
    [
        ("b.i.d.", "2/d"),
        ("BID", "2/d"),
        ("twice daily", "2/d"),
        ("2 times per day", "2/d"),
        ("1 time per 12 hours", "2/d"),
        ("q8h", "3/d"),
        ("every 8 hours", "3/d"),
        ("t.i.d.", "3/d"),
        ("once daily", "1/d"),
        ("q.d.", "1/d"),
        ("every other day", "0.5/d"),
        ("daily as needed", "1/d as needed"),
        ("Take as needed.", "as needed"),
    ],
)
def test_frequencies_normalise_to_doses_per_day(text: str, per_day: str) -> None:
    assert normalise_frequency(text) == per_day


@pytest.mark.parametrize(
    ("text", "route"),
    [
        ("PO", "oral"),
        ("by mouth", "oral"),
        ("Oral route (qualifier value)", "oral"),
        ("IV", "intravenous"),
        ("subcut", "subcutaneous"),
    ],
)
def test_routes_normalise(text: str, route: str) -> None:
    assert normalise_route(text) == route


@pytest.mark.parametrize(
    ("name", "key", "strength"),
    [
        ("Simvastatin 20 MG Oral Tablet", "simvastatin", "20 MG"),
        (
            "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet",
            "metoprolol succinate",
            "100 MG",
        ),
        (
            "hydrochlorothiazide 12.5 MG / lisinopril 20 MG Oral Tablet",
            "hydrochlorothiazide lisinopril",
            "12.5 MG / 20 MG",
        ),
        ("Nitroglycerin 0.4 MG/ACTUAT Mucosal Spray", "nitroglycerin", "0.4 MG/ACTUAT"),
    ],
)
def test_drug_key_keeps_the_ingredients_and_strength_is_read(
    name: str, key: str, strength: str
) -> None:
    assert drug_key(name) == key
    assert strength_of(name) == strength
