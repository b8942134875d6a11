"""The header, procedures, hospital course and condition at discharge of the evidence-only draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.clinical.tables import table
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import synthea_bundles
from tests.pipeline.conftest import default_draft

NO_NEW_FOLLOW_UP = (
    "No appointment, test or plan made in this stay for after discharge is documented; the plans "
    "above began before it."
)


def procedure(procedure_id: str, name: str, code: str, when: str) -> dict:
    return {
        "resourceType": "Procedure",
        "id": procedure_id,
        "status": "completed",
        "code": {"coding": [{"system": "http://snomed.info/sct", "code": code}], "text": name},
        "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "encounter": {"reference": f"Encounter/{fx.ENCOUNTER_ID}"},
        "performedDateTime": when,
    }


def record() -> dict:
    patient = fx.patient() | {
        "identifier": [
            {
                "type": {"coding": [{"code": "MR"}]},
                "system": "https://hospital.example/mrn",
                "value": "MRN-0042",
            }
        ]
    }
    stay = fx.encounter() | {
        "reasonCode": [{"text": "Aortic valve stenosis"}],
        "participant": [
            {
                "type": [{"coding": [{"code": "ATND"}]}],
                "individual": {"display": "Dr. Grace Hopper"},
            }
        ],
        "hospitalization": {"dischargeDisposition": {"text": "Home"}},
    }
    emergency = fx.encounter("ed", "2024-03-01T06:00:00+00:00", "2024-03-01T09:00:00+00:00", "EMER")
    vitals = []
    for obs_id, when, rate in (
        ("hr1", "2024-03-01T11:00:00+00:00", 112),
        ("hr2", "2024-03-05T10:00:00+00:00", 72),
    ):
        observation = fx.observation(obs_id, "Heart rate", rate, "/min", loinc="8867-4", when=when)
        observation["category"] = [{"coding": [{"code": "vital-signs"}]}]
        del observation["referenceRange"]
        vitals.append(observation)
    return fx.bundle(
        patient,
        stay,
        emergency,
        *vitals,
        procedure("avr", "Aortic valve replacement", "725351001", "2024-03-02T10:00:00+00:00"),
        procedure(
            "screen", "Depression screening (procedure)", "171207006", "2024-03-01T12:00:00+00:00"
        ),
        procedure(
            "recon",
            "Medication reconciliation (procedure)",
            "430193006",
            "2024-03-05T09:00:00+00:00",
        ),
        fx.medication_request(
            "apixaban",
            "Apixaban 5 MG Oral Tablet",
            authored="2024-03-04T09:00:00+00:00",
            encounter_id=fx.ENCOUNTER_ID,
        ),
    )


def drafted_from(record: dict) -> Summary:
    """The evidence-only draft of a hand-built record, with no salience model."""
    return summarize_evidence(
        evidence_from_fhir(record, settings=PipelineSettings()),
        salience=lambda text: ([], []),
        settings=PipelineSettings(),
    )


def sections() -> dict[str, list[str]]:
    summary = drafted_from(record())
    return {s.key: [sentence.text for sentence in s.sentences] for s in summary.sections}


def test_the_header_names_the_patient_their_record_number_and_the_attending() -> None:
    stay = sections()["stay"]
    assert (
        stay[0]
        == "Ada Lovelace, 73-year-old female, born 1950-06-15; medical record number MRN-0042."
    )
    assert "Attending: Dr. Grace Hopper." in stay
    assert not any("disposition" in line for line in stay)  # said once, at discharge


def test_a_birthday_within_the_stay_gives_the_age_at_discharge_too() -> None:
    """Born 1950-03-03, admitted 2024-03-01 at 73 and discharged on 2024-03-05 at 74: a reader
    read the age at admission alone as wrong against the discharge date."""
    born = fx.patient() | {"birthDate": "1950-03-03"}
    summary = drafted_from(fx.bundle(born, fx.encounter()))
    (header, *_) = summary.section("stay").sentences
    assert header.text.startswith("Ada Lovelace, 73-year-old female (74 at discharge), born")
    assert header.verdict == "supported"
    # Still in hospital (no discharge yet): the age at admission alone.
    open_stay = drafted_from(fx.bundle(born, fx.encounter(end=None)))
    (header, *_) = open_stay.section("stay").sentences
    assert header.text.startswith("Ada Lovelace, 73-year-old female, born")


def test_significant_procedures_are_listed_and_routine_care_is_left_out() -> None:
    assert sections()["procedures"] == ["Aortic valve replacement (completed) on 2024-03-02."]


def test_the_index_procedure_comes_first_and_only_the_main_treatment_is_told_twice() -> None:
    """The bypass leads the Procedures section, which follows the diagnoses (what was done leads
    the draft); the course tells the operation, the main treatment (a course without it read as
    missing it), and never the wound care again (readers read each procedure twice)."""
    state = evidence_from_fhir(
        fx.stay(
            fx.procedure("wound", "Wound care", when="2024-03-01T12:00:00+00:00"),
            fx.procedure("cabg", "Coronary artery bypass graft", when="2024-03-02T09:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert [s.text for s in summary.section("procedures").sentences] == [
        "Coronary artery bypass graft (completed) on 2024-03-02.",
        "Wound care (completed) on 2024-03-01.",
    ]
    keys = [section.key for section in summary.sections]
    assert keys.index("procedures") == keys.index("diagnoses") + 1
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert "Procedures: Coronary artery bypass graft on 2024-03-02." in course
    assert not any("Wound care" in line for line in course)


def test_a_procedure_done_on_separate_days_says_on_how_many_never_a_continuous_range() -> None:
    """Wound care on three separate days of a stay reads "on 3 days from … to …": "from the 1st
    to the 5th" alone reads as care that went on for five days (oxygen by mask, in one draft)."""
    days = ("2024-03-01", "2024-03-03", "2024-03-03", "2024-03-05")
    care = [
        fx.procedure(f"care-{i}", "Wound care", when=f"{day}T09:00:00+00:00")
        for i, day in enumerate(days)
    ]
    state = evidence_from_fhir(fx.stay(*care), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = summary.section("procedures").sentences
    assert line.text == "Wound care (completed) on 3 days from 2024-03-01 to 2024-03-05."
    assert line.flags == []


def test_the_course_is_told_from_the_structured_record() -> None:
    course = sections()["hospital_course"]
    assert course[:4] == [
        "Admitted from the emergency department on 2024-03-01 for Aortic valve stenosis.",
        "Procedures: Aortic valve replacement on 2024-03-02.",
        "Medications started: Apixaban 5 MG Oral Tablet.",
        "Discharged on 2024-03-05, after 4 day(s) in hospital.",
    ]
    assert not any("year-old" in line for line in course)  # the demographic line is the header's


def test_condition_at_discharge_is_the_disposition_and_the_last_vital_signs() -> None:
    assert sections()["condition_at_discharge"] == [
        "Discharge disposition: Home.",
        "Vital signs at discharge (2024-03-05): Heart rate 72 /min.",
    ]
    empty = drafted_from(fx.stay())
    assert empty.section("condition_at_discharge").empty_reason == "Not documented"


def test_a_sign_the_last_set_does_not_hold_is_given_at_its_last_reading() -> None:
    """The stay's last set is one body weight: the heart rate never taken after admission is
    named, the oxygen saturation of 88 % that morning is said with its date, and the saturation
    of the visit before admission is not."""

    def sign(obs_id: str, name: str, value: float, unit: str, loinc: str, when: str) -> dict:
        observation = fx.observation(obs_id, name, value, unit, loinc=loinc, when=when)
        observation["category"] = [{"coding": [{"code": "vital-signs"}]}]
        return observation

    state = evidence_from_fhir(
        fx.stay(
            sign(
                "spo2-before", "Oxygen saturation", 97, "%", "2708-6", "2024-02-27T09:00:00+00:00"
            ),
            sign("hr", "Heart rate", 80, "/min", "8867-4", "2024-03-01T11:00:00+00:00"),
            sign("spo2", "Oxygen saturation", 88, "%", "2708-6", "2024-03-05T02:00:00+00:00"),
            sign("weight", "Body Weight", 74.4, "kg", "29463-7", "2024-03-05T11:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = summary.section("condition_at_discharge").sentences
    assert [s.text for s in lines][-2:] == [
        "Vital signs at discharge (2024-03-05): Body Weight 74.4 kg.",
        "Not taken again after the admission's set: Heart rate. Not in that set, last taken "
        "earlier in the stay: Oxygen saturation 88 % on 2024-03-05.",
    ]
    cited = {state.fact(c).sources[0].resource for c in lines[-1].citations}
    assert cited == {"Observation/hr", "Observation/spo2"}


ROUTINE = table("routine_procedures", PipelineSettings())


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_every_significant_synthea_procedure_of_the_episode_is_cited(path: Path) -> None:
    state, summary = default_draft(path)
    cited = {c for s in summary.section("procedures").sentences for c in s.citations}
    routine = table("routine_procedures", PipelineSettings())
    for fact in state.facts["procedure"]:
        name = fact.attributes.name
        code = fact.attributes.code.code if fact.attributes.code else None
        assert (fact.id in cited) != routine.matches(code, name), name  # routine care left out
    assert all(s.verdict == "supported" for s in summary.sentences()), [
        (s.text, s.review_reasons()) for s in summary.sentences() if s.verdict != "supported"
    ]


def test_a_section_empty_because_the_record_starts_later_says_so() -> None:
    """The record's earliest procedure is years after the stay: none recorded in the stay, nor
    earlier in the record, not a bare "Not documented", and never the later date (nothing dated
    after discharge); an older procedure makes it a plain "Not documented" again."""
    later = fx.procedure("later", "Appendectomy", encounter_id="other", when="2025-05-02")
    state = evidence_from_fhir(fx.stay(later), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    assert summary.section("procedures").empty_reason == (
        "None recorded in this stay; the available record holds no procedures before discharge."
    )
    earlier = fx.procedure("earlier", "Appendectomy", encounter_id="other", when="2001-05-02")
    summary = summarize_evidence(
        evidence_from_fhir(fx.stay(later, earlier), settings=PipelineSettings()),
        settings=PipelineSettings(),
    )
    assert summary.section("procedures").empty_reason == "Not documented"


def test_the_pull_asks_for_where_the_record_starts_first_page_only() -> None:
    from fhir_mapping.pull_plan import record_start_searches

    searches = {s.resource_type: s.params for s in record_start_searches("p1")}
    assert searches["Procedure"] == {"patient": "Patient/p1", "_sort": "date", "_count": "1"}
    assert searches["Observation"]["category"] == "laboratory"


def test_a_stay_whose_type_names_a_treatment_says_it_in_the_course() -> None:
    """A detoxification stay: its type, a regime or therapy, is what it did, said on the
    admission line; a type that only says an admission happened adds nothing."""
    detox = fx.encounter() | {
        "type": [{"text": "Drug rehabilitation and detoxification (regime/therapy)"}],
        "reasonCode": [{"text": "Dependent drug abuse (disorder)"}],
    }
    summary = drafted_from(fx.bundle(fx.patient(), detox))
    (admitted, *_) = summary.section("hospital_course").sentences
    assert admitted.text == (
        "Admitted on 2024-03-01 for Dependent drug abuse: drug rehabilitation and "
        "detoxification, as the stay's type names it."
    )
    assert admitted.verdict == "supported"
    plain = fx.encounter() | {
        "type": [{"text": "Hospital admission (procedure)"}],
        "reasonCode": [{"text": "Dependent drug abuse (disorder)"}],
    }
    (admitted, *_) = (
        drafted_from(fx.bundle(fx.patient(), plain)).section("hospital_course").sentences
    )
    assert admitted.text == "Admitted on 2024-03-01 for Dependent drug abuse."
