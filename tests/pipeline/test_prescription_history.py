"""What the record's ended prescriptions say of the drugs a note's home list names: how a home
drug with no order was last taken, and which named drugs are no home drug (an office treatment a
clinician gave at a visit), said once as what they are, never asked about as held or stopped."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from tests import fhir_fixtures as fx
from tests.pipeline.drafting_support import HP_LISTING_LISINOPRIL, drafted


def test_a_home_drug_with_no_order_says_how_it_was_last_prescribed() -> None:
    """The H&P lists lisinopril 10 mg with no dose and no order carries it: its latest ended
    prescription of the year before says how it was taken, on its line and cited. An older one
    of the same drug, one that never said a dose, and one from beyond the year are not used."""

    def ended(request_id: str, authored: str, **dosage: object) -> dict:
        name = "Lisinopril 10 MG Oral Tablet"
        return fx.medication_request(
            request_id,
            name,
            status="completed",
            authored=authored,
            **dosage,  # type: ignore[arg-type]
        )

    spring = ended("spring", "2023-10-01", dose="1 tablet", frequency=(1, 1, "d"))
    older = ended("older", "2023-05-01", dose="2 tablet", frequency=(1, 1, "d"))
    bare = ended("bare", "2024-01-15")
    state, sections = drafted(HP_LISTING_LISINOPRIL, spring, older, bare)
    assert (
        "Home medications with no discharge order (held or stopped? confirm): lisinopril 10 mg "
        "oral tablet (last prescribed 2023-10-01: 1 tablet once daily); aspirin 81 mg oral "
        "tablet." in sections["medications"]
    )
    (last,) = state.facts["prescription"]
    assert last.sources[0].resource == "MedicationRequest/spring"
    long_ago = ended("long-ago", "2021-01-01", dose="1 tablet", frequency=(1, 1, "d"))
    state, sections = drafted(HP_LISTING_LISINOPRIL, long_ago)
    assert state.facts["prescription"] == []
    assert (
        "Home medications with no discharge order (held or stopped? confirm): lisinopril 10 mg "
        "oral tablet; aspirin 81 mg oral tablet." in sections["medications"]
    )


def test_a_drug_a_clinician_gave_at_an_earlier_visit_is_no_home_drug() -> None:
    """A dentist's fluoride gel: ordered and given at the visit (its MedicationAdministration in
    the order's encounter), the order completed, and carried by name in later notes' lists. It
    is an office treatment, never a home drug to hold or stop, said once as such (a paired
    reader read its absence as a home drug dropped). Ordered that day with no administration,
    it stays a home drug to ask about: the record does not say it was given."""
    gel = "sodium fluoride 0.0272 MG/MG Oral Gel"
    hp = fx.document_reference(
        "hp", fx.attachment(f"# Medications\n{gel.lower()}; lisinopril 10 mg oral tablet\n")
    )
    dental = fx.encounter(
        "dental",
        start="2023-08-07T11:00:00+00:00",
        end="2023-08-07T12:00:00+00:00",
        class_code="AMB",
    )
    medication = {"resourceType": "Medication", "id": "naf", "code": {"text": gel}}
    ordered = fx.medication_request(
        "naf-order", gel, status="completed", authored="2023-08-07T11:02:08+00:00"
    )
    ordered.pop("medicationCodeableConcept")
    ordered |= {"medicationReference": {"reference": "Medication/naf"}}
    ordered["encounter"] = {"reference": "Encounter/dental"}
    given = {
        "resourceType": "MedicationAdministration",
        "id": "naf-given",
        "status": "completed",
        "medicationCodeableConcept": {"text": gel},
        "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "context": {"reference": "Encounter/dental"},
        "effectiveDateTime": "2023-08-07T11:02:08+00:00",
    }
    state, sections = drafted(hp, dental, medication, ordered, given)
    (prescription,) = state.facts["prescription"]
    assert prescription.attributes.given_at_visit  # type: ignore[union-attr]
    assert (
        "Home medications with no discharge order (held or stopped? confirm): lisinopril 10 mg "
        "oral tablet." in sections["medications"]
    )
    assert [line for lines in sections.values() for line in lines if "fluoride" in line] == [
        "On the notes' medication list, but given at a visit, not taken at home: sodium "
        "fluoride 0.0272 mg/mg oral gel (ordered and given at the visit of 2023-08-07)."
    ]
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("medications").sentences if "fluoride" in s.text]
    assert line.verdict == "supported" and len(line.citations) == 2
    state, sections = drafted(hp, dental, medication, ordered)
    assert state.facts["prescription"] == []
    assert any("sodium fluoride" in line for line in sections["medications"])
