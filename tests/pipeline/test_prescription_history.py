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


def test_a_course_finished_with_its_illness_is_no_home_drug() -> None:
    """A cough syrup ordered for a bronchitis that resolved before the stay, the order completed
    with no dose, and carried by name in the admission note's list: a finished course, said once
    as such with its illness and when that resolved, never a home drug to hold or stop nor a drug
    the age rules judge. While its illness lasts (no abatement, or one after admission) the
    record does not say the course ended, and it stays a home drug to ask about."""
    syrup = "Acetaminophen 21.7 MG/ML / Dextromethorphan Hydrobromide 1 MG/ML Oral Solution"
    hp = fx.document_reference(
        "hp", fx.attachment(f"# Medications\n{syrup.lower()}; lisinopril 10 mg oral tablet\n")
    )

    def course(abatement: str | None) -> tuple[dict, dict]:
        illness = fx.condition(
            "bronchitis",
            "Acute bronchitis (disorder)",
            clinical="resolved" if abatement else "active",
            encounter_id=None,
            onset="2023-11-02T09:00:00+00:00",
            abatement=abatement,
        )
        ordered = fx.medication_request(
            "syrup", syrup, status="completed", authored="2023-11-02T09:10:00+00:00"
        )
        ordered["reasonReference"] = [{"reference": "Condition/bronchitis"}]
        return illness, ordered

    state, sections = drafted(hp, *course("2023-11-16T09:00:00+00:00"))
    (prescription,) = state.facts["prescription"]
    assert prescription.attributes.course_for == "Acute bronchitis (disorder)"  # type: ignore[union-attr]
    assert (
        "Home medications with no discharge order (held or stopped? confirm): lisinopril 10 mg "
        "oral tablet." in sections["medications"]
    )
    said = [line for lines in sections.values() for line in lines if "dextromethorphan" in line]
    assert said == [
        "On the notes' medication list, but a finished course for an illness that has resolved: "
        f"{syrup.lower()} (ordered 2023-11-02 for acute bronchitis, resolved 2023-11-16)."
    ]
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("medications").sentences if "finished" in s.text]
    assert line.verdict == "supported" and len(line.citations) == 2
    for abatement in (None, "2024-03-03T09:00:00+00:00"):
        state, sections = drafted(hp, *course(abatement))
        assert state.facts["prescription"] == []
        assert any(
            line.startswith("Home medications with no discharge order") and "acetaminophen" in line
            for line in sections["medications"]
        )
