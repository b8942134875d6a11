"""Medications by ingredient: every part of a combination product counts, and the same drug
twice at discharge is flagged, on hand-built records."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.medications import ingredients
from pipeline.clinical.stay_context import mentioned
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


def test_a_combination_product_names_each_of_its_ingredients() -> None:
    assert ingredients("Hydrochlorothiazide 25 MG / Lisinopril 10 MG Oral Tablet") == [
        "hydrochlorothiazide",
        "lisinopril",
    ]
    assert ingredients("Acetaminophen 325 MG / Oxycodone Hydrochloride 10 MG [Percocet]") == [
        "acetaminophen",
        "oxycodone",
    ]
    assert ingredients("24 HR Metoprolol Succinate 100 MG Extended Release Oral Tablet") == [
        "metoprolol"
    ]
    # A ratio in a brand's name is no combination.
    assert ingredients("Levora 0.15/30 28 Day Pack") == ["levora"]


def test_a_note_confirms_a_combination_only_when_it_names_every_ingredient() -> None:
    combination = "Hydrochlorothiazide 25 MG / Lisinopril 10 MG Oral Tablet"
    assert not mentioned(combination, "Continues hydrochlorothiazide daily.")
    assert mentioned(combination, "Takes lisinopril and hydrochlorothiazide.")


def _duplications(*names: str) -> list[str]:
    """The duplication flags of a stay whose orders going home are ``names``: only the drugs
    differ between these tests."""
    orders = [going_home(f"m{position}", name) for position, name in enumerate(names)]
    state = evidence_from_fhir(fx.stay(*orders), settings=PipelineSettings())
    return [f.reason for f in state.flags_for_review if f.code == "therapeutic_duplication"]


def test_the_same_drug_in_two_orders_is_flagged() -> None:
    assert _duplications(
        "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet",
        "metoprolol tartrate 25 MG Oral Tablet",
    ) == [
        "The same drug twice at discharge (metoprolol): 24 HR metoprolol succinate 100 MG "
        "Extended Release Oral Tablet; metoprolol tartrate 25 MG Oral Tablet"
    ]
    assert _duplications("metoprolol tartrate 25 MG Oral Tablet") == []


def test_the_same_drug_twice_within_a_class_duplication_is_said_on_its_line() -> None:
    """Two immediate-release oxycodone products beside a hydrocodone one: one line for the
    opioids, naming the oxycodone (and the acetaminophen of two combinations) twice, never a
    second flag about the same list."""
    assert _duplications(
        "oxycodone hydrochloride 5 MG Oral Tablet",
        "acetaminophen 325 MG / oxycodone hydrochloride 10 MG Oral Tablet",
        "acetaminophen 325 MG / hydrocodone bitartrate 7.5 MG Oral Tablet",
    ) == [
        "Therapeutic duplication at discharge (opioid; three immediate-release; oxycodone "
        "twice; acetaminophen twice): oxycodone hydrochloride 5 MG Oral Tablet; acetaminophen "
        "325 MG / oxycodone hydrochloride 10 MG Oral Tablet; acetaminophen 325 MG / hydrocodone "
        "bitartrate 7.5 MG Oral Tablet"
    ]


def test_a_long_acting_opioid_with_an_immediate_release_one_is_one_regimen() -> None:
    """A scheduled long-acting opioid with an immediate-release one for breakthrough pain is
    one regimen (WHO 2018, NCCN), of the same ingredient or not: no duplication. Two
    long-acting ones (an extended-release tablet and a patch, or methadone) are, and the line
    names only those two."""
    extended = "12 HR oxycodone hydrochloride 10 MG Extended Release Oral Tablet"
    rescue = "acetaminophen 325 MG / oxycodone hydrochloride 10 MG Oral Tablet"
    assert _duplications(extended, rescue) == []
    assert _duplications("methadone hydrochloride 10 MG Oral Tablet", rescue) == []
    patch = "72 HR fentanyl 0.025 MG/HR Transdermal System"
    assert _duplications(extended, rescue, patch) == [
        f"Therapeutic duplication at discharge (opioid; two long-acting): {extended}; {patch}"
    ]
    assert _duplications("methadone hydrochloride 10 MG Oral Tablet", patch) == [
        "Therapeutic duplication at discharge (opioid; two long-acting): methadone "
        f"hydrochloride 10 MG Oral Tablet; {patch}"
    ]
    assert _duplications(extended, "24 HR oxycodone hydrochloride 20 MG Extended Release") == [
        f"The same drug twice at discharge (oxycodone): {extended}; 24 HR oxycodone "
        "hydrochloride 20 MG Extended Release"
    ]


def test_an_ace_inhibitor_inside_a_combination_duplicates_an_arb() -> None:
    assert _duplications(
        "Hydrochlorothiazide 25 MG / Lisinopril 10 MG Oral Tablet",
        "losartan potassium 50 MG Oral Tablet",
    ) == [
        "Therapeutic duplication at discharge (ACE inhibitor or ARB): Hydrochlorothiazide 25 MG "
        "/ Lisinopril 10 MG Oral Tablet; losartan potassium 50 MG Oral Tablet"
    ]
