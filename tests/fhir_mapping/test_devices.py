"""Devices and supplies on hand-built records: an implant on record, whatever its age, is in
Procedures and read as an indication; home equipment is not, and has a Follow-up line when it is
new to the stay; what was supplied during the stay is shown in Procedures when it is an organ, a
tissue or a blood product, in the course when it is home equipment or came in the same delivery
as home equipment, never as a consumable on its own."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def device(device_id: str, name: str, made: str, status: str = "active") -> dict[str, Any]:
    return {
        "resourceType": "Device",
        "id": device_id,
        "status": status,
        "type": {"coding": [{"system": "http://snomed.info/sct", "display": name}]},
        "manufactureDate": made,
        "patient": {"reference": f"Patient/{fx.PATIENT_ID}"},
    }


def supplied(delivery_id: str, name: str, when: str) -> dict[str, Any]:
    return {
        "resourceType": "SupplyDelivery",
        "id": delivery_id,
        "status": "completed",
        "patient": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "suppliedItem": {
            "quantity": {"value": 1},
            "itemCodeableConcept": {"coding": [{"display": name}]},
        },
        "occurrenceDateTime": when,
    }


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(
        request_id, name, encounter_id=fx.ENCOUNTER_ID, dose="1 tablet", frequency=(1, 1, "d")
    )


def procedures(*resources: dict[str, Any]) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [s.text for s in summary.section("procedures").sentences]


def test_an_implant_on_record_is_shown_and_home_equipment_is_not() -> None:
    assert procedures(
        device("valve", "Aortic valve bioprosthesis (physical object)", "2019-05-02"),
        device("chair", "Power-assisted wheelchair (physical object)", "2015-01-01"),
        device("old", "Coronary artery stent (physical object)", "2001-01-01", "inactive"),
    ) == ["Implants on record: Aortic valve bioprosthesis (device record of 2019-05-02)."]


def test_an_organ_supplied_in_the_stay_is_shown_and_consumables_and_other_days_are_not() -> None:
    assert procedures(
        supplied("graft", "Kidney part (body structure)", "2024-03-02T10:00:00+00:00"),
        supplied("floss", "Dental floss (physical object)", "2024-03-02T10:00:00+00:00"),
        supplied("earlier", "Kidney part (body structure)", "2020-01-01T10:00:00+00:00"),
    ) == ["Supplied during the stay: Kidney part on 2024-03-02."]


def test_a_mechanical_valve_on_record_asks_for_a_vitamin_k_antagonist() -> None:
    """2020 ACC/AHA valvular guideline: lifelong warfarin; a direct oral anticoagulant is no
    answer."""
    valve = device("valve", "Mechanical heart valve prosthesis (physical object)", "2010-05-02")
    state = evidence_from_fhir(
        fx.stay(valve, going_home("x", "apixaban 5 MG Oral Tablet")), settings=PipelineSettings()
    )
    asked = [f.reason for f in state.flags_for_review if "mechanical" in f.reason]
    assert asked == [
        "No vitamin K antagonist at discharge after a mechanical heart valve (Mechanical heart "
        "valve prosthesis): confirm it was considered, or why it is not given"
    ]
    warfarin = going_home("w", "warfarin sodium 5 MG Oral Tablet")
    state = evidence_from_fhir(fx.stay(valve, warfarin), settings=PipelineSettings())
    assert not [f for f in state.flags_for_review if "vitamin K" in f.reason]


def test_the_pull_asks_for_devices_and_supplies() -> None:
    from datetime import UTC, datetime, timedelta

    from fhir_mapping.pull_plan import StayWindow, stay_searches
    from fhir_mapping.resources import RECORD_TYPES
    from smartapp.access.oauth import READ_TYPES

    assert {"Device", "SupplyDelivery"} <= set(RECORD_TYPES) <= set(READ_TYPES)
    admitted = datetime(2024, 3, 1, tzinfo=UTC)
    window = StayWindow(
        admitted, admitted + timedelta(days=4), timedelta(hours=48), timedelta(days=365)
    )
    searched = {search.resource_type: search.params for search in stay_searches("p", window)}
    assert searched["Device"] == {"patient": "Patient/p"}
    assert searched["SupplyDelivery"] == {"patient": "Patient/p"}


def test_a_transplant_stay_coded_only_as_awaiting_names_the_organ_supplied() -> None:
    """The line that asks the physician to name the problem says what the record shows was
    done: a kidney supplied in the stay; and Needs review never calls Procedures undocumented
    above that line."""
    stay = fx.encounter() | {"reasonCode": [{"text": "Awaiting transplantation of kidney"}]}
    graft = supplied("graft", "Kidney part (body structure)", "2024-03-02T10:00:00+00:00")
    state = evidence_from_fhir(fx.bundle(fx.patient(), stay, graft), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (first, *_) = summary.section("diagnoses").sentences
    assert first.text.endswith("supplied in the stay: Kidney part on 2024-03-02.")
    (undocumented,) = [
        s.text for s in summary.section("needs_review").sentences if s.text.startswith("Not doc")
    ]
    assert "Procedures" not in undocumented


def drafted(*resources: dict[str, Any]) -> dict[str, list[str]]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return {section.key: [s.text for s in section.sentences] for section in summary.sections}


def test_home_equipment_new_to_the_stay_is_in_follow_up_and_what_it_supplied_in_the_course() -> (
    None
):
    """A CPAP unit recorded at the sleep study two weeks before is Follow-up's; the masks the
    stay supplied are a treatment begun, the course's (two readers read a sleep-apnoea stay
    without them as one where nothing was started, and two more missed it in the course), with
    the air filter of the same delivery, its supply; a nebulizer of 1990 is the patient's, not
    news of the stay, and the sleep study's analyzer is no home equipment."""
    lines = drafted(
        device(
            "cpap", "Home continuous positive airway pressure unit (physical object)", "2024-02-15"
        ),
        device("study", "Polysomnography analyzer (physical object)", "2024-02-15"),
        device("nebulizer", "Home nebulizer (physical object)", "1990-05-01"),
        supplied("mask", "CPAP/BPAP oral mask (physical object)", "2024-03-02T10:00:00+00:00"),
        supplied("filter", "Air filter, device (physical object)", "2024-03-02T10:00:00+00:00"),
    )
    assert lines["follow_up"] == [
        "Home medical equipment: Home continuous positive airway pressure unit (recorded "
        "2024-02-15)."
    ]
    assert (
        "Supplied in the stay for use at home on 2024-03-02: CPAP/BPAP oral mask; Air filter, "
        "device." in (lines["hospital_course"])
    )
    old = drafted(device("nebulizer", "Home nebulizer (physical object)", "1990-05-01"))
    assert old["follow_up"] == []


def test_what_a_delivery_brings_with_the_equipment_is_its_supply_and_alone_a_consumable() -> None:
    """Five readers missed the tubing and filter delivered with the CPAP masks (DMEPOS: the
    devices and their supplies); a filter delivered on its own, with no equipment, is a
    consumable of the ward, and items of two deliveries keep their dates."""
    lines = drafted(
        supplied("mask", "CPAP/BPAP oral mask (physical object)", "2024-03-02T10:00:00+00:00"),
        supplied(
            "tube", "Medical air low pressure tubing (physical object)", "2024-03-02T10:00:00+00:00"
        ),
        supplied("alone", "Air filter, device (physical object)", "2024-03-03T09:00:00+00:00"),
        supplied(
            "mask2",
            "Continuous positive airway pressure/Bilevel positive airway pressure mask "
            "(physical object)",
            "2024-03-04T09:00:00+00:00",
        ),
    )
    assert lines["hospital_course"][1] == (
        "Supplied in the stay for use at home: CPAP/BPAP oral mask on 2024-03-02; Medical air low "
        "pressure tubing on 2024-03-02; Continuous positive airway pressure/Bilevel positive "
        "airway pressure mask on 2024-03-04."
    )
    alone = drafted(
        supplied("alone", "Air filter, device (physical object)", "2024-03-03T09:00:00+00:00")
    )
    assert not any("Air filter" in line for line in alone["hospital_course"])


def test_the_treatment_the_supplied_equipment_begins_leads_the_courses_line() -> None:
    """Three readers found that the course never said CPAP was started: the stay's care plan
    names it, and the equipment table's words tie its activity to the masks supplied."""
    plan = fx.care_plan(
        "apnoea",
        "Care plan",
        activity="Continuous positive airway pressure ventilation treatment (regime/therapy)",
        period={"start": "2024-03-02T09:00:00+00:00"},
    )
    plan["activity"].append(
        {"detail": {"status": "in-progress", "code": {"text": "Weight reduction regimen"}}}
    )
    lines = drafted(
        plan,
        supplied("mask", "CPAP/BPAP oral mask (physical object)", "2024-03-02T10:00:00+00:00"),
    )
    assert (
        "Begun in the stay: Continuous positive airway pressure ventilation treatment (care plan "
        "of 2024-03-02); supplied for use at home on 2024-03-02: CPAP/BPAP oral mask."
        in lines["hospital_course"]
    )
