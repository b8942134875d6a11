"""The hospitalization as one episode, read as of discharge (hand-written FHIR, then Synthea)."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    LabResultAttributes,
    MedicationAttributes,
    ProcedureAttributes,
)
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import synthea_bundles


def episode_record() -> dict:
    emergency = fx.encounter(
        "ed-visit", "2024-03-01T06:00:00+00:00", "2024-03-01T08:00:00+00:00", "EMER"
    )
    surgery = fx.encounter(
        "surgery", "2024-03-02T09:00:00+00:00", "2024-03-02T13:00:00+00:00", "AMB"
    )
    step_down = fx.encounter(
        "step-down", "2024-03-04T09:00:00+00:00", "2024-03-04T10:00:00+00:00", "IMP"
    ) | {"partOf": {"reference": f"Encounter/{fx.ENCOUNTER_ID}"}}
    last_week = fx.encounter(
        "clinic", "2024-02-20T09:00:00+00:00", "2024-02-20T10:00:00+00:00", "AMB"
    )
    follow_up = fx.encounter(
        "after", "2024-03-20T09:00:00+00:00", "2024-03-20T10:00:00+00:00", "AMB"
    )
    return fx.stay(
        emergency,
        surgery,
        step_down,
        last_week,
        follow_up,
        fx.procedure("triage", "Emergency triage", "ed-visit", "2024-03-01T06:30:00+00:00"),
        fx.procedure("valve", "Aortic valve replacement", "surgery", "2024-03-02T10:00:00+00:00"),
        fx.procedure("echo", "Echocardiography", "step-down", "2024-03-04T09:30:00+00:00"),
        fx.procedure("flu-shot", "Clinic injection", "clinic", "2024-02-20T09:30:00+00:00"),
        fx.procedure("sutures", "Suture removal", "after", "2024-03-20T09:30:00+00:00"),
        fx.condition(
            "later-resolved",
            "Pneumonia",
            clinical="resolved",
            encounter_id=None,
            onset="2024-02-25",
            abatement="2024-03-15",
        ),
        fx.condition("later-onset", "Gout", encounter_id=None, onset="2024-03-10"),
        fx.medication_request(
            "after-order", "Allopurinol 100 MG Oral Tablet", authored="2024-03-10"
        ),
        fx.document_reference("late-note", fx.attachment("Seen in clinic."))
        | {"date": "2024-03-20T10:00:00+00:00"},
        fx.document_reference("ed-note", fx.attachment("Emergency note."), encounter_id="ed-visit")
        | {"date": "2024-03-01T07:00:00+00:00"},
    )


def facts_of(state: EvidenceState, kind: type) -> list:
    return [f.attributes for f in state.all_facts() if isinstance(f.attributes, kind)]


def test_the_episode_is_the_stay_and_the_encounters_that_belong_with_it() -> None:
    state = evidence_from_fhir(
        episode_record(), f"Encounter/{fx.ENCOUNTER_ID}", settings=PipelineSettings()
    )
    assert {member.resource: member.reason for member in state.episode} == {
        f"Encounter/{fx.ENCOUNTER_ID}": "the inpatient stay",
        "Encounter/ed-visit": "the emergency visit, ended 2.0 h before admission",
        "Encounter/surgery": "overlaps the stay",
        "Encounter/step-down": "part of the stay",
    }
    assert any(event.action == "episode" for event in state.trace)
    procedures = {p.name for p in facts_of(state, ProcedureAttributes)}
    assert procedures == {"Emergency triage", "Aortic valve replacement", "Echocardiography"}
    titles = {d.sources[0].resource for d in state.documents}
    assert titles == {"DocumentReference/ed-note"}  # the episode's notes, none after discharge


def test_the_record_is_read_as_of_discharge() -> None:
    state = evidence_from_fhir(
        episode_record(), f"Encounter/{fx.ENCOUNTER_ID}", settings=PipelineSettings()
    )
    diagnoses = {d.display: d for d in facts_of(state, DiagnosisAttributes)}
    assert diagnoses["Pneumonia"].clinical_status == "active"  # resolved only after discharge
    assert diagnoses["Pneumonia"].abatement is None
    assert "Gout" not in diagnoses
    assert not facts_of(state, MedicationAttributes)  # ordered after discharge
    reasons = {e.resource: e.reason for e in state.exclusions}
    assert "after discharge" in reasons["Condition/later-onset"]
    assert "after the stay" in reasons["MedicationRequest/after-order"]


def test_an_encounter_that_did_something_in_the_two_days_before_admission_joins() -> None:
    """The bypass on an ambulatory encounter the day before the ward stay is the episode's; a
    check-up that did nothing the same day is not."""
    bypass = fx.encounter("cabg", "2024-02-28T08:00:00+00:00", "2024-02-28T14:00:00+00:00", "AMB")
    checkup = fx.encounter(
        "checkup", "2024-02-29T08:00:00+00:00", "2024-02-29T09:00:00+00:00", "AMB"
    )
    state = evidence_from_fhir(
        fx.stay(
            bypass,
            checkup,
            fx.procedure(
                "cabg-1", "Coronary artery bypass graft", "cabg", "2024-02-28T09:00:00+00:00"
            ),
        ),
        f"Encounter/{fx.ENCOUNTER_ID}",
        settings=PipelineSettings(),
    )
    reasons = {member.resource: member.reason for member in state.episode}
    assert reasons["Encounter/cabg"] == "a procedure, ended 44.0 h before admission"
    assert "Encounter/checkup" not in reasons
    assert "Coronary artery bypass graft" in {p.name for p in facts_of(state, ProcedureAttributes)}


def reason(text: str) -> dict:
    return {"reasonCode": [{"text": text}]}


def stay_lines(state: EvidenceState) -> list[str]:
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [sentence.text for sentence in summary.section("stay").sentences]


def test_an_inpatient_stay_days_before_that_the_stay_continues_joins_as_a_readmission() -> None:
    """The ward stay after the operation (no reason of its own), or the same reason again, within
    a week: one episode, and the draft says which encounters it joined; another reason stays out."""
    valve_stay = fx.encounter(
        "valve-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | reason("Aortic valve stenosis")
    valve = fx.procedure(
        "avr", "Replacement of aortic valve", "valve-stay", "2024-02-21T09:00:00+00:00"
    )
    state = evidence_from_fhir(fx.stay(valve_stay, valve), settings=PipelineSettings())
    reasons = {member.resource: member.reason for member in state.episode}
    assert reasons["Encounter/valve-stay"] == "the inpatient stay just before (a readmission)"
    assert "Replacement of aortic valve" in {p.name for p in facts_of(state, ProcedureAttributes)}
    assert (
        "Joined to this stay as one episode: inpatient stay from 2024-02-20 to 2024-02-26 "
        "(Aortic valve stenosis), the earlier stay of this readmission." in stay_lines(state)
    )
    other = fx.bundle(fx.patient(), fx.encounter() | reason("Pneumonia"), valve_stay, valve)
    apart = evidence_from_fhir(other, settings=PipelineSettings())
    assert "Encounter/valve-stay" not in {member.resource for member in apart.episode}


def test_a_readmissions_earlier_stay_gives_baselines_never_this_stays_results() -> None:
    """Its care is joined, but its values are the patient's before this stay: the latest one is
    the baseline, and none of them reads as this stay's admission or last value."""
    earlier = fx.encounter(
        "first-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | reason("Heart failure")
    in_earlier = {"encounter": {"reference": "Encounter/first-stay"}}
    saturation = fx.observation(
        "s1", "Oxygen saturation", 78, "%", loinc="2708-6", when="2024-02-20T09:00:00+00:00"
    )
    first = fx.observation("c0", "Creatinine", 0.8, "mg/dL", when="2024-02-22T08:00:00+00:00")
    last = fx.observation("c1", "Creatinine", 0.9, "mg/dL", when="2024-02-25T08:00:00+00:00")
    own = fx.observation("c2", "Creatinine", 2.1, "mg/dL", when="2024-03-02T08:00:00+00:00")
    unlinked = {k: v for k, v in first.items() if k != "encounter"}
    stay = fx.encounter() | reason("Heart failure")
    record = fx.bundle(
        fx.patient(), stay, earlier, saturation | in_earlier, unlinked, last | in_earlier, own
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    assert "Encounter/first-stay" in {member.resource for member in state.episode}
    values = sorted((r.value, r.baseline) for r in facts_of(state, LabResultAttributes))
    # The earlier stay's saturation, which this stay never measured, is a baseline too.
    assert values == [(Decimal("0.9"), True), (Decimal("2.1"), False), (Decimal("78"), True)]


def test_emergency_visits_and_stays_of_the_weeks_before_are_named_not_joined() -> None:
    overdose = fx.encounter(
        "overdose", "2024-02-14T20:00:00+00:00", "2024-02-15T02:00:00+00:00", "EMER"
    ) | reason("Overdose")
    long_ago = fx.encounter(
        "long-ago", "2023-12-01T20:00:00+00:00", "2023-12-01T23:00:00+00:00", "EMER"
    ) | reason("Fall")
    clinic = fx.encounter("clinic", "2024-02-20T09:00:00+00:00", "2024-02-20T10:00:00+00:00", "AMB")
    state = evidence_from_fhir(fx.stay(overdose, long_ago, clinic), settings=PipelineSettings())
    assert "Encounter/overdose" not in {member.resource for member in state.episode}
    lines = stay_lines(state)
    assert (
        "Acute care in the weeks before this stay (not part of it): emergency visit from "
        "2024-02-14 to 2024-02-15 (Overdose)." in lines
    )
    assert not any("Fall" in line or "ambulatory" in line for line in lines)
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("stay").sentences if s.text.startswith("Acute care")]
    assert line.verdict == "supported", line.review_reasons()


def test_the_window_before_admission_is_a_setting() -> None:
    narrow = PipelineSettings(episode_window_h=1)
    state = evidence_from_fhir(episode_record(), f"Encounter/{fx.ENCOUNTER_ID}", settings=narrow)
    assert "Encounter/ed-visit" not in {member.resource for member in state.episode}


def _dates(state: EvidenceState) -> list[tuple[str, datetime]]:
    """Every date a cited fact carries, with what it is."""
    found = []
    for attributes in facts_of(state, DiagnosisAttributes):
        found += [(f"onset {attributes.display}", attributes.onset)]
        found += [(f"abatement {attributes.display}", attributes.abatement)]
    for attributes in facts_of(state, MedicationAttributes):
        found.append((f"order {attributes.name}", attributes.authored_on))
    for attributes in facts_of(state, LabResultAttributes):
        found.append((f"result {attributes.name}", attributes.effective))
    for attributes in facts_of(state, ProcedureAttributes):
        found.append((f"procedure {attributes.name}", attributes.performed_start))
    for document in state.documents:
        found.append((f"document {document.title}", document.date))
    return [(what, when) for what, when in found if when is not None]


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_nothing_cited_is_dated_after_discharge_in_any_synthea_stay(path: Path) -> None:
    state = evidence_from_fhir(json.loads(path.read_bytes()), settings=PipelineSettings())
    (stay,) = [f for f in facts_of(state, EncounterAttributes) if f.kind == "stay"]
    assert state.episode[0].resource == state.encounter
    if stay.end is None:
        return
    late = [(what, when) for what, when in _dates(state) if when > stay.end]
    assert late == []


def test_the_header_gives_the_episodes_start_and_the_course_its_days() -> None:
    from pipeline.summarizing.evidence_summary import summarize_evidence

    bypass = fx.encounter("cabg", "2024-02-28T08:00:00+00:00", "2024-02-28T14:00:00+00:00", "AMB")
    cabg = fx.procedure(
        "cabg-1", "Coronary artery bypass graft", "cabg", "2024-02-28T09:00:00+00:00"
    )
    state = evidence_from_fhir(
        fx.stay(bypass, cabg), f"Encounter/{fx.ENCOUNTER_ID}", settings=PipelineSettings()
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    stay = [s.text for s in summary.section("stay").sentences]
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert (
        "Inpatient stay (IMP) from 2024-03-01 to 2024-03-05; the episode began on 2024-02-28."
        in stay
    )
    assert (
        "Discharged on 2024-03-05, after 4 day(s) in hospital (6 day(s) since the episode began)."
    ) in course
    assert all(
        s.verdict == "supported"
        for s in summary.sentences()
        if s.section in {"stay", "hospital_course"}
    )
    same_day = evidence_from_fhir(
        episode_record(), f"Encounter/{fx.ENCOUNTER_ID}", settings=PipelineSettings()
    )  # ED at 06:00
    header = summarize_evidence(
        same_day, salience=lambda text: ([], []), settings=PipelineSettings()
    ).section("stay")
    assert not any("episode began" in s.text for s in header.sentences)


@pytest.mark.parametrize(
    "coded",
    [
        {"type": [{"text": "Admission to skilled nursing facility"}]},
        {"reasonCode": [{"text": "Patient transfer to skilled nursing facility (procedure)"}]},
    ],
    ids=["by its type", "by its own reason, the transfer"],
)
def test_a_skilled_nursing_stay_is_named_as_one(coded: dict) -> None:
    from pipeline.summarizing.evidence_summary import summarize_evidence

    nursing = fx.encounter() | coded
    state = evidence_from_fhir(fx.bundle(fx.patient(), nursing), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    stay = [s.text for s in summary.section("stay").sentences]
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert any(line.startswith("Skilled nursing stay (IMP) from 2024-03-01") for line in stay)
    assert any("after 4 day(s) in the skilled nursing facility" in line for line in course)
    assert not any("in hospital" in line for line in course)


def test_a_readmissions_earlier_stay_gives_its_doses_a_line_of_their_own() -> None:
    """Furosemide given in the stay of a week before, and again in this one: each stay's doses
    on its own line, never the earlier stay's credited to this one."""
    earlier = fx.encounter(
        "first-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | reason("Heart failure")

    def dose(dose_id: str, encounter: str, when: str) -> dict:
        furosemide = "Furosemide 10 MG/ML Injection"
        return fx.medication_administration(dose_id, furosemide, when, encounter_id=encounter)

    record = fx.bundle(
        fx.patient(),
        fx.encounter() | reason("Heart failure"),
        earlier,
        dose("d1", "first-stay", "2024-02-21T08:00:00+00:00"),
        dose("d2", "first-stay", "2024-02-24T08:00:00+00:00"),
        dose("d3", fx.ENCOUNTER_ID, "2024-03-02T08:00:00+00:00"),
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    given = [s for s in summary.section("medications").sentences if "Given" in s.text]
    assert [s.text for s in given] == [
        "Given in the earlier stay of this readmission: Furosemide 10 MG/ML Injection, 2 doses "
        "from 2024-02-21 to 2024-02-24.",
        "Given during the stay: Furosemide 10 MG/ML Injection on 2024-03-02.",
    ]
    # The count is computed from the doses cited, so the number check finds it.
    assert [flag.check for s in given for flag in s.flags] == []
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert "Treated in the stay with: Furosemide 10 MG/ML Injection on 2024-03-02." in course


def test_a_drug_ordered_and_given_in_the_stay_is_one_line_with_its_doses() -> None:
    """Furosemide ordered in the stay, given twice and not continued: one line that says all of
    it and cites the order and both doses, where there were two lines for one drug."""
    order = fx.medication_request(
        "iv-furosemide", "Furosemide 10 MG/ML Injection", status="stopped",
        encounter_id=fx.ENCOUNTER_ID,
    )  # fmt: skip
    doses = [
        fx.medication_administration(
            f"dose-{hour}", "Furosemide 10 MG/ML Injection", f"2024-03-02T{hour}:00:00+00:00"
        )
        for hour in ("08", "20")
    ]
    record = fx.bundle(fx.patient(), fx.encounter() | reason("Heart failure"), order, *doses)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    given = [s for s in summary.section("medications").sentences if "Given" in s.text]
    assert [s.text for s in given] == [
        "Given during the stay: Furosemide 10 MG/ML Injection, 2 doses on 2024-03-02, not "
        "continued at discharge."
    ]
    assert len(given[0].citations) == 3
    assert given[0].flags == []


def test_a_dose_at_a_check_up_is_not_called_a_treatment_of_a_stay() -> None:
    """A fluoride gel applied at an ambulatory check-up is listed as given, never as what a
    stay was treated with."""
    visit = fx.encounter(class_code="AMB")
    when = "2024-03-01T09:00:00+00:00"
    gel = fx.medication_administration("gel", "sodium fluoride Oral Gel", when)
    state = evidence_from_fhir(fx.bundle(fx.patient(), visit, gel), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert not any("Treated" in s.text for s in summary.section("hospital_course").sentences)
    assert any("sodium fluoride" in s.text for s in summary.section("medications").sentences)


def test_an_earlier_stays_procedures_are_said_to_be_that_stays() -> None:
    """Oxygen by mask on three days of the heart failure stay a week before, and once in this
    one: the earlier stay's days on a line of its own, first, never "from the 21st to the 2nd"
    as if this stay had given oxygen for ten days; a surgical stay the same-day transfer
    continues is "this episode", not a readmission."""
    earlier = fx.encounter(
        "first-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | reason("Heart failure")
    oxygen = [
        fx.procedure(f"o2-{day}", "Oxygen therapy", "first-stay", f"2024-02-{day}T09:00:00+00:00")
        for day in (21, 22, 23)
    ] + [fx.procedure("o2-now", "Oxygen therapy", when="2024-03-02T09:00:00+00:00")]
    record = fx.bundle(fx.patient(), fx.encounter() | reason("Heart failure"), earlier, *oxygen)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert [s.text for s in summary.section("procedures").sentences] == [
        "Oxygen therapy (completed) on 3 days from 2024-02-21 to 2024-02-23, in the earlier stay "
        "of this readmission.",
        "Oxygen therapy (completed) on 2024-03-02.",
    ]
    # No operation: the oxygen is the stays' main treatment, told in the course too.
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert "Procedures: Oxygen therapy on 2024-03-02." in course
    surgery = fx.encounter(
        "surgery", "2024-02-27T08:00:00+00:00", "2024-03-01T10:00:00+00:00", "IMP"
    ) | reason("Injury of knee")
    operation = fx.procedure("op", "Knee arthroscopy", "surgery", "2024-02-27T09:00:00+00:00")
    rehabilitation = fx.encounter() | reason("Rehabilitation")
    continued = evidence_from_fhir(
        fx.bundle(fx.patient(), rehabilitation, surgery, operation), settings=PipelineSettings()
    )
    drafted = summarize_evidence(
        continued, salience=lambda text: ([], []), settings=PipelineSettings()
    )
    assert [s.text for s in drafted.section("procedures").sentences] == [
        "Knee arthroscopy (completed) on 2024-02-27, in the earlier stay of this episode."
    ]


def test_a_transfers_reason_read_from_the_earlier_stay_is_said_to_be_that_stays() -> None:
    """A nursing stay coded only as the transfer, after the knee operation's stay: its reason is
    the operation's, and the draft says whose, never as if the nursing stay were for the injury;
    a stay whose own reason is clinical says it plainly."""
    surgery = fx.encounter(
        "surgery", "2024-02-25T08:00:00+00:00", "2024-03-01T10:00:00+00:00", "IMP"
    ) | reason("Injury of anterior cruciate ligament")
    nursing = fx.encounter() | reason("Patient transfer to skilled nursing facility (procedure)")
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), nursing, surgery), settings=PipelineSettings()
    )
    assert (
        "Reason for the stay: Injury of anterior cruciate ligament, the reason of the episode's "
        "inpatient stay from 2024-02-25 to 2024-03-01." in stay_lines(state)
    )
    own = evidence_from_fhir(
        fx.bundle(fx.patient(), fx.encounter() | reason("Heart failure"), surgery),
        settings=PipelineSettings(),
    )
    assert "Reason for the stay: Heart failure." in stay_lines(own)
