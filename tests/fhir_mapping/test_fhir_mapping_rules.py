"""FHIR to evidence, rule by rule, on hand-written resources."""

from __future__ import annotations

import base64

import pytest

from fhir_mapping.resources import EvidenceInputError
from pipeline.evidence.model import EvidenceState, MedicationAttributes
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def medication_named(state: EvidenceState, name: str) -> MedicationAttributes:
    for fact in state.facts["medication"]:
        assert isinstance(fact.attributes, MedicationAttributes)
        if fact.attributes.name == name:
            return fact.attributes
    raise AssertionError(f"no medication {name!r}")


def exclusion_of(state: EvidenceState, resource: str) -> tuple[str, str]:
    for exclusion in state.exclusions:
        if exclusion.resource == resource:
            return exclusion.kind, exclusion.reason
    raise AssertionError(f"{resource} not excluded")


# --- scope ---------------------------------------------------------------------------------------


def test_default_scope_is_the_most_recent_inpatient_stay() -> None:
    state = evidence_from_fhir(
        fx.bundle(
            fx.patient(),
            fx.encounter("old-stay", "2020-01-01T00:00:00+00:00", "2020-01-03T00:00:00+00:00"),
            fx.encounter("stay", "2023-01-01T00:00:00+00:00", "2023-01-04T00:00:00+00:00"),
            fx.encounter("clinic", "2024-06-01T00:00:00+00:00", None, class_code="AMB"),
        ),
        settings=PipelineSettings(),
    )
    assert state.encounter == "Encounter/stay"


def test_without_inpatient_stays_the_most_recent_encounter_is_used() -> None:
    state = evidence_from_fhir(
        fx.bundle(
            fx.patient(),
            fx.encounter("a", "2020-01-01T00:00:00+00:00", class_code="AMB"),
            fx.encounter("b", "2021-01-01T00:00:00+00:00", class_code="EMER"),
        ),
        settings=PipelineSettings(),
    )
    assert state.encounter == "Encounter/b"


def test_encounter_can_be_chosen_by_id_or_reference() -> None:
    data = fx.bundle(
        fx.patient(),
        fx.encounter("a", "2020-01-01T00:00:00+00:00"),
        fx.encounter("b", "2021-01-01T00:00:00+00:00"),
    )
    assert evidence_from_fhir(data, "a", settings=PipelineSettings()).encounter == "Encounter/a"
    assert (
        evidence_from_fhir(data, "Encounter/a", settings=PipelineSettings()).encounter
        == "Encounter/a"
    )
    assert (
        evidence_from_fhir(data, "urn:uuid:a", settings=PipelineSettings()).encounter
        == "Encounter/a"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"resourceType": "Patient"}, "no Encounter"),
        ({"hello": "world"}, "neither a FHIR Bundle"),
        ([fx.encounter()], "no Patient resource"),
        (fx.bundle(fx.patient("p1"), fx.patient("p2"), fx.encounter()), "holds 2 patients"),
    ],
)
def test_input_that_cannot_be_mapped_is_a_clear_error(data: object, message: str) -> None:
    with pytest.raises(EvidenceInputError, match=message):
        evidence_from_fhir(data, settings=PipelineSettings())


def test_unknown_encounter_is_a_clear_error() -> None:
    with pytest.raises(EvidenceInputError, match="'nope' is not in the input"):
        evidence_from_fhir(fx.stay(), "nope", settings=PipelineSettings())


def test_broken_patient_is_named_in_the_error() -> None:
    broken = fx.patient() | {"birthDate": "not a date"}
    with pytest.raises(EvidenceInputError, match="Patient/pat-1: birthDate"):
        evidence_from_fhir(fx.bundle(broken, fx.encounter()), settings=PipelineSettings())


# --- malformed resources -------------------------------------------------------------------------


def test_a_resource_that_fails_to_parse_is_recorded_and_the_rest_mapped() -> None:
    broken = fx.medication_request("bad", "aspirin 81 MG") | {"status": None, "authoredOn": 7}
    good = fx.medication_request("good", "lisinopril 10 MG", encounter_id=fx.ENCOUNTER_ID)
    state = evidence_from_fhir(
        fx.stay(broken, good, "not even a dict"), settings=PipelineSettings()
    )  # type: ignore[arg-type]
    kind, reason = exclusion_of(state, "MedicationRequest/bad")
    assert kind == "parse_error" and "status" in reason
    assert medication_named(state, "lisinopril 10 MG").phase == "discharge"
    assert exclusion_of(state, "urn:uuid:4") == (
        "parse_error",
        "not a FHIR resource: resourceType is missing",
    )


# --- medications ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "phase"),
    [
        ({"encounter_id": fx.ENCOUNTER_ID}, "discharge"),
        ({"encounter_id": fx.ENCOUNTER_ID, "category": "inpatient"}, "inpatient"),
        ({"authored": "2024-03-03T09:00:00+00:00"}, "discharge"),
        ({"authored": "2023-01-01T00:00:00+00:00"}, "admission"),
        ({"authored": "2023-01-01T00:00:00+00:00", "status": "on-hold"}, "admission"),
        (
            {
                "authored": "2023-01-01T00:00:00+00:00",
                "status": "completed",
                "validity_end": "2024-03-04T00:00:00+00:00",
            },
            "admission",
        ),
        ({"authored": None}, "unknown"),
        ({"authored": "2023-01-01T00:00:00+00:00", "status": "stopped"}, "unknown"),
    ],
)
def test_medication_phase_rules(overrides: dict, phase: str) -> None:
    state = evidence_from_fhir(
        fx.stay(fx.medication_request("m", "aspirin 81 MG", **overrides)),
        settings=PipelineSettings(),
    )
    attributes = medication_named(state, "aspirin 81 MG")
    assert attributes.phase == phase
    assert attributes.phase_rule


@pytest.mark.parametrize(
    ("overrides", "kind", "reason"),
    [
        ({"status": "entered-in-error"}, "status", "status is entered-in-error"),
        ({"authored": "2024-04-01T00:00:00+00:00"}, "out_of_scope", "after the stay"),
        (
            {"authored": "2023-01-01T00:00:00+00:00", "status": "completed"},
            "historical",
            "completed prescription from before admission",
        ),
        (
            {"authored": "2023-01-01T00:00:00+00:00", "validity_end": "2023-06-01T00:00:00+00:00"},
            "historical",
            "before admission",
        ),
    ],
)
def test_medications_outside_the_stay_are_excluded_with_a_reason(
    overrides: dict, kind: str, reason: str
) -> None:
    state = evidence_from_fhir(
        fx.stay(fx.medication_request("m", "aspirin 81 MG", **overrides)),
        settings=PipelineSettings(),
    )
    assert state.facts["medication"] == []
    found_kind, found_reason = exclusion_of(state, "MedicationRequest/m")
    assert found_kind == kind and reason in found_reason


def test_dosage_is_read_from_dose_timing_and_route() -> None:
    request = fx.ordered_in_stay(
        "m", "metoprolol 25 MG Oral Tablet", code="866924", route="Oral", **fx.TWICE_DAILY
    )
    attributes = medication_named(
        evidence_from_fhir(fx.stay(request), settings=PipelineSettings()),
        "metoprolol 25 MG Oral Tablet",
    )
    assert (attributes.strength, attributes.dose, attributes.frequency, attributes.route) == (
        "25 MG",
        "1 tablet",
        "twice daily",  # as a clinician writes it
        "Oral",
    )
    assert attributes.code is not None and attributes.code.code == "866924"


def test_a_bare_dose_is_counted_in_the_drugs_dose_form() -> None:
    """Synthea's "doseQuantity": {"value": 1.0} with no unit reads "1 tablet", not "1.0"."""
    request = fx.medication_request(
        "m", "Simvastatin 10 MG Oral Tablet", dose="2.0", frequency=(1, 1.0, "d")
    )
    request["encounter"] = {"reference": f"Encounter/{fx.ENCOUNTER_ID}"}
    attributes = medication_named(
        evidence_from_fhir(fx.stay(request), settings=PipelineSettings()),
        "Simvastatin 10 MG Oral Tablet",
    )
    assert (attributes.dose, attributes.frequency) == ("2 tablets", "once daily")


def test_medication_reference_to_a_bundle_entry_cites_both_resources() -> None:
    medication = {
        "resourceType": "Medication",
        "id": "med-1",
        "code": {"coding": [{"system": fx.RXNORM, "code": "197361", "display": "amlodipine 5 MG"}]},
    }
    request = fx.medication_request("m", "x", encounter_id=fx.ENCOUNTER_ID)
    del request["medicationCodeableConcept"]
    request["medicationReference"] = {"reference": "urn:uuid:med-1"}
    state = evidence_from_fhir(fx.stay(medication, request), settings=PipelineSettings())
    (fact,) = state.facts["medication"]
    assert fact.attributes.name == "amlodipine 5 MG"
    assert [ref.resource for ref in fact.sources] == ["MedicationRequest/m", "Medication/med-1"]


def test_medication_reference_to_a_contained_resource() -> None:
    request = fx.medication_request("m", "x", encounter_id=fx.ENCOUNTER_ID)
    del request["medicationCodeableConcept"]
    request["contained"] = [
        {"resourceType": "Medication", "id": "c1", "code": {"text": "heparin 5000 UNT"}}
    ]
    request["medicationReference"] = {"reference": "#c1"}
    state = evidence_from_fhir(fx.stay(request), settings=PipelineSettings())
    assert state.facts["medication"][0].attributes.name == "heparin 5000 UNT"


def test_unresolvable_medication_reference_is_excluded_not_guessed() -> None:
    request = fx.medication_request("m", "x", encounter_id=fx.ENCOUNTER_ID)
    del request["medicationCodeableConcept"]
    request["medicationReference"] = {"reference": "Medication/missing"}
    state = evidence_from_fhir(fx.stay(request), settings=PipelineSettings())
    assert state.facts["medication"] == []
    assert exclusion_of(state, "MedicationRequest/m")[0] == "unresolved"


# --- conditions, allergies, procedures ----------------------------------------------------------


def test_refuted_and_entered_in_error_conditions_are_excluded_but_traced() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.condition("c1", "Pneumonia", verification="refuted"),
            fx.condition("c2", "Sepsis", verification="entered-in-error"),
            fx.condition("c3", "Heart failure"),
        ),
        settings=PipelineSettings(),
    )
    assert [f.attributes.display for f in state.facts["diagnosis"]] == ["Heart failure"]
    for resource in ("Condition/c1", "Condition/c2"):
        assert exclusion_of(state, resource)[0] == "status"
        assert any(event.resource == resource for event in state.trace)


def test_problems_active_during_the_stay_are_included_resolved_ones_are_not() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.condition("active", "Diabetes", code="1", encounter_id=None, onset="2010-01-01"),
            fx.condition(
                "resolved-before",
                "Sinusitis",
                code="2",
                encounter_id=None,
                onset="2019-01-01",
                clinical="resolved",
                abatement="2019-02-01",
            ),
            fx.condition(
                "resolved-after",
                "Fracture",
                code="3",
                encounter_id=None,
                onset="2024-02-01",
                clinical="resolved",
                abatement="2024-05-01",
            ),
        ),
        settings=PipelineSettings(),
    )
    roles = {f.attributes.display: f.attributes.role for f in state.facts["diagnosis"]}
    assert roles == {"Diabetes": "active_problem", "Fracture": "active_problem"}
    assert "not active during the stay" in exclusion_of(state, "Condition/resolved-before")[1]


def test_allergy_is_mapped_with_reactions_and_inactive_ones_excluded() -> None:
    state = evidence_from_fhir(
        fx.stay(fx.allergy("a1", "Penicillin V"), fx.allergy("a2", "Latex", clinical="inactive")),
        settings=PipelineSettings(),
    )
    (fact,) = state.facts["allergy"]
    assert fact.attributes.substance == "Penicillin V"
    assert fact.attributes.reactions == ["Hives"]
    assert fact.attributes.criticality == "high"
    assert exclusion_of(state, "AllergyIntolerance/a2") == ("status", "clinical status is inactive")


def test_procedures_of_the_stay_only() -> None:
    def procedure(procedure_id: str, when: str, status: str = "completed") -> dict:
        return {
            "resourceType": "Procedure",
            "id": procedure_id,
            "status": status,
            "code": {"text": f"procedure {procedure_id}"},
            "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
            "performedDateTime": when,
        }

    state = evidence_from_fhir(
        fx.stay(
            procedure("in", "2024-03-02T00:00:00+00:00"),
            procedure("before", "2020-01-01T00:00:00+00:00"),
            procedure("not-done", "2024-03-02T00:00:00+00:00", status="not-done"),
        ),
        settings=PipelineSettings(),
    )
    assert [f.attributes.name for f in state.facts["procedure"]] == ["procedure in"]
    assert exclusion_of(state, "Procedure/before")[0] == "out_of_scope"
    assert exclusion_of(state, "Procedure/not-done") == ("status", "status is not-done")


# --- results -------------------------------------------------------------------------------------


def test_final_report_gives_results_citing_observation_and_report() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.observation("o1", "Glucose", 182, "mg/dL"),
            fx.diagnostic_report("r1", "final", ["o1"]),
        ),
        settings=PipelineSettings(),
    )
    (fact,) = state.facts["lab_result"]
    assert (str(fact.attributes.value), fact.attributes.unit) == ("182", "mg/dL")
    assert (fact.attributes.reference_low, fact.attributes.reference_high) == (70, 100)
    assert [(ref.resource, ref.path) for ref in fact.sources] == [
        ("Observation/o1", "valueQuantity"),
        ("DiagnosticReport/r1", "result[0]"),
    ]


def test_a_report_result_that_is_not_an_observation_is_unresolved_not_read_as_one() -> None:
    report = fx.diagnostic_report("r1", "final", []) | {
        "result": [{"reference": f"Patient/{fx.PATIENT_ID}"}]
    }
    state = evidence_from_fhir(fx.stay(report), settings=PipelineSettings())
    assert state.facts.get("lab_result", []) == []
    kind, reason = exclusion_of(state, "DiagnosticReport/r1")
    assert kind == "unresolved" and "not an Observation" in reason


def test_preliminary_report_is_a_pending_result() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.observation("o1", "Blood culture", 0, "1", status="preliminary"),
            fx.diagnostic_report("r1", "preliminary", ["o1"], name="Blood culture"),
        ),
        settings=PipelineSettings(),
    )
    (pending,) = state.facts["pending_result"]
    assert (pending.attributes.name, pending.attributes.status) == ("Blood culture", "preliminary")
    assert state.facts["lab_result"] == []


def test_observation_components_are_separate_results() -> None:
    blood_pressure = fx.observation("bp", "Blood pressure", 0, "", category="vital-signs")
    del blood_pressure["valueQuantity"]
    blood_pressure["component"] = [
        {"code": {"text": "Systolic"}, "valueQuantity": {"value": 150, "unit": "mm[Hg]"}},
        {"code": {"text": "Diastolic"}, "valueQuantity": {"value": 95, "unit": "mm[Hg]"}},
    ]
    state = evidence_from_fhir(fx.stay(blood_pressure), settings=PipelineSettings())
    assert [(f.attributes.name, str(f.attributes.value)) for f in state.facts["lab_result"]] == [
        ("Systolic", "150"),
        ("Diastolic", "95"),
    ]
    assert state.facts["lab_result"][0].sources[0].path == "component[0].valueQuantity"


# --- documents -----------------------------------------------------------------------------------

NOTE = (
    "# Hospital Course\nAdmitted with pneumonia. Treated with ceftriaxone.\n\n"
    "# Allergies\nNo Known Allergies.\n"
)


def test_note_presented_as_document_and_report_is_one_document() -> None:
    report = fx.diagnostic_report("r1", "final", []) | {"presentedForm": [fx.attachment(NOTE)]}
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(NOTE)), report),
        settings=PipelineSettings(),
    )
    (document,) = state.documents
    assert [ref.resource for ref in document.sources] == [
        "DocumentReference/d1",
        "DiagnosticReport/r1",
    ]
    course = [f.attributes.text for f in state.facts["course"]]
    assert course == ["Admitted with pneumonia.", "Treated with ceftriaxone."]
    (allergy,) = state.facts["allergy"]
    assert allergy.attributes.no_known_allergies
    assert {ref.resource for ref in allergy.sources} == {
        "DocumentReference/d1",
        "DiagnosticReport/r1",
    }


def test_attachment_url_is_read_from_a_binary_in_the_bundle() -> None:
    binary = {
        "resourceType": "Binary",
        "id": "b1",
        "contentType": "text/plain",
        "data": base64.b64encode(NOTE.encode()).decode(),
    }
    state = evidence_from_fhir(
        fx.stay(
            binary, fx.document_reference("d1", {"contentType": "text/plain", "url": "Binary/b1"})
        ),
        settings=PipelineSettings(),
    )
    assert state.documents[0].pages[0].text == NOTE


def test_an_attachment_url_reaches_the_physician_as_its_host_alone_never_as_a_link() -> None:
    url = "https://files.example.org/notes/1.txt?signature=s3cr3t"
    state = evidence_from_fhir(
        fx.stay(
            fx.document_reference("remote", {"contentType": "text/plain", "url": url}),
            fx.document_reference("good", fx.attachment(NOTE)),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, settings=PipelineSettings())
    said = " ".join(s.text for s in summary.section("needs_review").sentences)
    errors = " ".join(e for d in state.documents for e in d.errors)
    assert "files.example.org" in errors and "files.example.org" in said
    for leaked in ("https://", "signature", "s3cr3t", "/notes/1.txt"):
        assert leaked not in errors and leaked not in said


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ({"contentType": "text/plain", "url": "Binary/missing"}, "is not in the input"),
        ({"contentType": "text/plain", "data": "!!!not base64!!!"}, "not valid base64"),
        ({"contentType": "text/plain"}, "neither data nor url"),
        (fx.attachment("plain words", "application/pdf"), "mislabelled"),
        (fx.attachment(b"%PDF-1.7 truncated", "application/pdf"), "corrupt PDF"),
    ],
)
def test_broken_attachment_is_recorded_on_its_document_and_others_still_ingested(
    content: dict, error: str
) -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.document_reference("broken", content),
            fx.document_reference("good", fx.attachment(NOTE)),
        ),
        settings=PipelineSettings(),
    )
    broken = next(d for d in state.documents if d.sources[0].resource == "DocumentReference/broken")
    good = next(d for d in state.documents if d.sources[0].resource == "DocumentReference/good")
    assert broken.pages == [] and error in broken.errors[0]
    assert good.pages[0].has_text
    assert any(
        flag.code == "document_error" and flag.document == broken.id
        for flag in state.flags_for_review
    )
    assert any(
        event.action == "document_error" and event.document == broken.id for event in state.trace
    )
    assert state.facts["course"]


def test_note_of_another_stay_is_excluded() -> None:
    state = evidence_from_fhir(
        fx.bundle(
            fx.patient(),
            fx.encounter(),
            fx.encounter("other", "2010-01-01T00:00:00+00:00", "2010-01-02T00:00:00+00:00"),
            fx.document_reference("d1", fx.attachment(NOTE), encounter_id="other"),
        ),
        settings=PipelineSettings(),
    )
    assert state.documents == []
    assert exclusion_of(state, "DocumentReference/d1") == ("out_of_scope", "note not of this stay")


@pytest.mark.parametrize(
    "marking",
    [
        {
            "meta": {
                "security": [
                    {
                        "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
                        "code": "AIAST",
                    }
                ]
            }
        },
        {"identifier": [{"system": "https://provenote.dev/fhir/draft-key", "value": "k1"}]},
        {"author": [{"reference": "Device/some-model"}]},
        {
            "contained": [{"resourceType": "Device", "id": "model"}],
            "author": [{"reference": "#model"}],
        },
    ],
    ids=["aiast-label", "provenote-identifier", "device-author", "contained-device-author"],
)
def test_an_ai_generated_draft_is_never_evidence(marking: dict) -> None:
    earlier_draft = (
        fx.document_reference(
            "earlier-draft", fx.attachment("Hospital course: the patient recovered well.")
        )
        | marking
    )
    human_note = fx.document_reference("human-note", fx.attachment("Patient walked today."))
    state = evidence_from_fhir(fx.stay(earlier_draft, human_note), settings=PipelineSettings())
    assert [d.sources[0].resource for d in state.documents] == ["DocumentReference/human-note"]
    (excluded,) = [e for e in state.exclusions if e.kind == "ai_generated"]
    assert excluded.resource == "DocumentReference/earlier-draft"
    assert excluded.reason == "AI-generated draft"
    assert any(
        event.action == "excluded:ai_generated" and event.detail == "AI-generated draft"
        for event in state.trace
    )


def test_timings_read_as_a_clinician_writes_them() -> None:
    from fhir.resources.R4B.timing import Timing

    from fhir_mapping.dosage import timing_text

    def written(frequency: int, period: float, unit: str) -> str | None:
        repeat = {"frequency": frequency, "period": period, "periodUnit": unit}
        return timing_text(Timing.model_validate({"repeat": repeat}))

    assert written(1, 1, "d") == "once daily"
    assert written(2, 1, "d") == "twice daily"
    assert written(5, 1, "d") == "5 times daily"
    assert written(1, 6, "h") == "every 6 hours"
    assert written(1, 1, "wk") == "once weekly"
    assert written(2, 3, "d") == "2 times every 3 days"
    # Synthea writes every number as a decimal: "1.0 every 1.0 days" is once daily.
    assert written(1, 1.0, "d") == "once daily"
    assert written(1, 6.0, "h") == "every 6 hours"
    assert written(1, 1.5, "d") == "every 1.5 days"


def test_the_pull_asks_for_the_doses_of_the_look_back() -> None:
    """A drug a clinician gave at a visit of the year before (a dentist's fluoride gel) is an
    office treatment, not a home drug: the pull reads the look-back's administrations to know."""
    from datetime import UTC, datetime, timedelta

    from fhir_mapping.pull_plan import StayWindow, stay_searches

    admitted = datetime(2024, 3, 1, tzinfo=UTC)
    window = StayWindow(
        admitted, admitted + timedelta(days=4), timedelta(hours=48), timedelta(days=365)
    )
    searched = {search.resource_type: search.params for search in stay_searches("p", window)}
    assert searched["MedicationAdministration"]["effective-time"] == [
        "ge2023-03-02",
        "le2024-03-06",
    ]
