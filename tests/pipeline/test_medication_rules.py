"""Medication reconciliation a physician can trust: what is active at discharge, how it is
taken, and the safety flags (hand-written FHIR, then every Synthea stay)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.evidence.model import MedicationAttributes
from tests import fhir_fixtures as fx
from tests.conftest import synthea_bundles
from tests.pipeline.conftest import default_draft
from tests.pipeline.drafting_support import drafted

# A complete dosage, so that only the rule under test speaks.
FULL: dict[str, object] = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


BEFORE = "2023-06-01"


def prn(resource: dict, text: str = "Take as needed.") -> dict:
    resource["dosageInstruction"] = [{"text": text, "asNeededBoolean": True}]
    return resource


def test_an_order_completed_during_the_stay_is_given_during_the_stay_never_new() -> None:
    state, sections = drafted(
        fx.ordered_in_stay("abx", "Cefazolin 1000 MG Injection", status="completed"),
        fx.ordered_in_stay("home", "Apixaban 5 MG Oral Tablet", **fx.TWICE_DAILY),
    )
    medications = sections["medications"]
    assert not any("Cefazolin" in line for line in medications if line.startswith("NEW"))
    assert "Given during the stay, not continued at discharge: Cefazolin 1000 MG Injection." in (
        medications
    )
    assert any(line.startswith("NEW: Apixaban 5 MG Oral Tablet") for line in medications)
    discharge = {state.fact(i).attributes.name for i in state.medications.discharge}
    assert discharge == {"Apixaban 5 MG Oral Tablet"}


def test_as_needed_and_the_route_of_the_dose_form_are_shown_and_not_flagged_missing() -> None:
    # (A heart drug "as needed" is a doubt of its own: test_regimen_risks.)
    pain = prn(fx.ordered_in_stay("pain", "Acetaminophen 325 MG Oral Tablet"))
    state, sections = drafted(pain)
    (line,) = [m for m in sections["medications"] if "Acetaminophen" in m]
    assert "(as needed, oral;" in line
    assert 'instructions "Take as needed."' in line  # the order's own words, quoted
    assert "frequency" not in line and "route not documented" not in line
    (fact,) = state.facts["medication"]
    assert fact.attributes.route_source == "dose form"
    reasons = " ".join(flag.reason for flag in state.flags_for_review)
    assert "route" not in reasons and "frequency" not in reasons


def test_dose_frequency_route_and_duration_come_from_the_dosage_instruction() -> None:
    course = fx.ordered_in_stay(
        "course",
        "Amoxicillin 500 MG Oral Capsule",
        dose="1 capsule",
        frequency=(3, 1, "d"),
        route="Oral",
    )
    course["dosageInstruction"][0]["timing"]["repeat"]["boundsDuration"] = {
        "value": 7,
        "unit": "days",
        "code": "d",
    }
    state, sections = drafted(course)
    (line,) = [m for m in sections["medications"] if "Amoxicillin" in m]
    assert line == (
        "NEW: Amoxicillin 500 MG Oral Capsule (1 capsule three times daily for 7 days, Oral)."
    )
    assert state.facts["medication"][0].attributes.route_source == "order"


def test_a_drug_class_allergy_is_flagged_first() -> None:
    state, sections = drafted(
        fx.allergy("pcn", "Penicillin V"),
        fx.ordered_in_stay("amox", "Amoxicillin 500 MG Oral Capsule"),
        fx.ordered_in_stay("a", "Clopidogrel 75 MG Oral Tablet"),
        fx.ordered_in_stay("b", "prasugrel 10 MG Oral Tablet"),
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "allergy_conflict"]
    assert flag.reason == (
        "Amoxicillin 500 MG Oral Capsule at discharge, and an allergy to Penicillin V (penicillin)"
    )
    needs_review = sections["needs_review"]
    assert needs_review[0].startswith("Amoxicillin 500 MG Oral Capsule at discharge")
    assert needs_review[1].startswith("Therapeutic duplication")


def test_leaving_with_no_medication_after_taking_some_is_flagged() -> None:
    only_stopped, _ = drafted(
        fx.medication_request(
            "home",
            "Metformin 500 MG Oral Tablet",
            status="stopped",
            authored=BEFORE,
            validity_end="2024-03-03",
        )
    )
    (flag,) = [f for f in only_stopped.flags_for_review if f.code == "no_discharge_medications"]
    assert flag.reason == (
        "No discharge medication, though these were active at admission: Metformin 500 MG Oral "
        "Tablet: confirm they were all stopped"
    )


def test_an_allergic_disposition_is_not_an_allergy_to_contradict() -> None:
    disposition = fx.allergy("disp", "Allergic disposition (finding)")
    disposition["code"] = {
        "coding": [{"system": "http://snomed.info/sct", "code": "609328004"}],
        "text": "Allergic disposition (finding)",
    }
    note = fx.document_reference(
        "note", fx.attachment("# Allergies\nNo Known Allergies.\n\n# Plan\nHome.")
    )
    state, _ = drafted(disposition, note)
    assert not [c for c in state.conflicts if c.kind == "allergy_status"]


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_synthea_discharge_medications_are_orders_active_at_discharge(path: Path) -> None:
    state, summary = default_draft(path)
    lines = [s.text for s in summary.section("medications").sentences]
    for fact_id in state.medications.discharge:
        medication = state.fact(fact_id).attributes
        assert isinstance(medication, MedicationAttributes)
        assert medication.status in {"active", "on-hold"}, medication.name
    for fact in state.facts["medication"]:
        medication = fact.attributes
        assert isinstance(medication, MedicationAttributes)
        shown = [line for line in lines if medication.name in line and line[:4] in {"NEW:", "CONT"}]
        if medication.as_needed and shown:
            assert all("as needed" in line for line in shown), shown
        if medication.status == "completed":
            assert not [line for line in shown if line.startswith("NEW:")], medication.name


def test_a_notes_medication_list_is_compared_with_the_orders_by_ingredient() -> None:
    note = fx.document_reference(
        "hp",
        fx.attachment(
            "# Medications\nlisinopril 10 mg oral tablet; naproxen sodium 220 mg oral tablet\n\n"
            "# Plan\nAdmit."
        ),
    )
    state, sections = drafted(
        note,
        fx.medication_request("home-acei", "Lisinopril 20 MG Oral Tablet", authored=BEFORE),
        fx.medication_request("home-statin", "Atorvastatin 40 MG Oral Tablet", authored=BEFORE),
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "medication_discrepancy"]
    assert flag.reason == (
        "Medication list in Discharge note: it leaves out Atorvastatin 40 MG Oral Tablet "
        "(ordered before admission)"
    )
    assert any(
        line.startswith("Medication list in Discharge note") for line in sections["needs_review"]
    )
    # The naproxen the note names and no order carries is a home drug to ask about, once.
    assert (
        "Home medications with no discharge order (held or stopped? confirm): "
        "naproxen sodium 220 mg oral tablet." in sections["medications"]
    )
    assert not any("absent from the orders" in line for line in sections["needs_review"])


def test_a_note_listing_no_medications_beside_home_orders_is_a_discrepancy_too() -> None:
    note = fx.document_reference("hp", fx.attachment("# Medications\nNo Active Medications.\n"))
    state, sections = drafted(
        note, fx.medication_request("home", "Metformin 500 MG Oral Tablet", authored=BEFORE)
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "medication_discrepancy"]
    assert "leaves out Metformin 500 MG Oral Tablet" in flag.reason
    # The note and the order disagree: the order is to confirm, never CONTINUED.
    assert not any(line.startswith("CONTINUED") for line in sections["medications"])
    assert any(
        line.startswith("Active orders that this stay's home medication list leaves out (confirm")
        and "Metformin 500 MG Oral Tablet" in line
        for line in sections["medications"]
    )
    assert state.medications.discharge == []
    agreeing = fx.document_reference("hp", fx.attachment("# Medications\nmetformin 500 mg\n"))
    state, sections = drafted(
        agreeing, fx.medication_request("home", "Metformin 500 MG Oral Tablet", authored=BEFORE)
    )
    assert not [f for f in state.flags_for_review if f.code == "medication_discrepancy"]
    assert any(line.startswith("CONTINUED: Metformin") for line in sections["medications"])


def test_an_old_order_beside_a_note_listing_none_says_the_note_left_it_out() -> None:
    """A B12 order of three years before, and the stay's note reads "No Active Medications.":
    the line never says the notes do not mention it; it quotes the list that left it out."""
    note = fx.document_reference("hp", fx.attachment("# Medications\nNo Active Medications.\n"))
    _, sections = drafted(
        note,
        fx.medication_request(
            "b12", "Vitamin B12 5 MG/ML Injectable Solution", authored="2021-05-02"
        ),
    )
    assert (
        "Last ordered long before this stay, not renewed, and left out of its note's medication "
        'list ("No Active Medications.") (confirm whether still taken): Vitamin B12 5 MG/ML '
        "Injectable Solution (last ordered 2021-05-02)." in sections["medications"]
    )


def test_a_stay_with_no_medication_whose_note_lists_none_says_so_not_not_documented() -> None:
    """The note documents an absence; "Not documented" would read as a gap."""
    note = fx.document_reference("hp", fx.attachment("# Medications\nNo Active Medications.\n"))
    state, sections = drafted(note)
    assert sections["medications"] == [
        "No medication ordered in the record, and the notes' medication list reads \"No Active "
        'Medications".'
    ]
    assert "medication" not in state.missing_fields


def test_an_old_order_duplicated_by_a_home_drug_the_notes_confirm_says_continued() -> None:
    """Simvastatin of 1994, confirmed by the admission note, goes home CONTINUED: it was not
    "ordered in this stay"; the unmentioned atorvastatin order is the one proposed stopped."""
    note = fx.document_reference("hp", fx.attachment("# Medications\nsimvastatin 20 mg\n"))
    _, sections = drafted(
        note,
        fx.medication_request(
            "simva", "Simvastatin 20 MG Oral Tablet", authored="1994-05-27", **FULL
        ),  # type: ignore[arg-type]
        fx.medication_request(
            "atorva", "atorvastatin 40 MG Oral Tablet", authored="2003-07-19", **FULL
        ),  # type: ignore[arg-type]
    )
    assert (
        "PROPOSED STOP, TO CONFIRM: atorvastatin 40 MG Oral Tablet (ordered 2003-07-19, before "
        "this stay): duplicated by Simvastatin 20 MG Oral Tablet, continued from the home list."
    ) in sections["medications"]


def test_a_home_nsaid_held_or_stopped_beside_an_antiplatelet_going_home_is_flagged() -> None:
    """Ibuprofen the patient takes at home, with no discharge order ("held or stopped?"), may
    still be taken beside the clopidogrel that goes home: the same bleeding risk."""
    state, _ = drafted(
        fx.medication_statement("home", "ibuprofen 400 MG Oral Tablet"),
        fx.ordered_in_stay("c", "clopidogrel 75 MG Oral Tablet", **FULL),
    )
    assert [c.kind for c in state.medications.changes if c.name.startswith("ibuprofen")] == [
        "held_or_stopped"
    ]
    (flag,) = [f for f in state.flags_for_review if "NSAID" in f.reason]
    assert "ibuprofen 400 MG Oral Tablet" in flag.reason and "clopidogrel" in flag.reason
