"""The Follow-up section of the evidence-only draft: care plans, appointments, vaccines and drugs
given, imaging, and what the record pull asks for to read them."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.test_course_rules import (
    NO_NEW_FOLLOW_UP,
    drafted_from,
)


def chest_x_ray(study_id: str) -> dict[str, Any]:
    """A chest X-ray study of the stay's first day, with no report."""
    return {
        "resourceType": "ImagingStudy",
        "id": study_id,
        "status": "available",
        "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "encounter": {"reference": f"Encounter/{fx.ENCOUNTER_ID}"},
        "started": "2024-03-01T12:00:00+00:00",
        "procedureCode": [{"text": "Chest X-ray"}],
    }


def test_follow_up_vaccines_medications_given_and_imaging_are_read() -> None:
    plan = fx.care_plan(
        "plan",
        "Discharge care plan",
        activity="Cardiac rehabilitation",
        activity_status="scheduled",
        period={"start": "2024-03-05T10:00:00+00:00"},
    )
    old_plan = plan | {"id": "old", "encounter": None, "period": {"start": "2019-01-01"}}
    appointment = fx.appointment("visit", "Cardiology clinic", end="2024-03-19T09:30:00+00:00")
    vaccine = fx.immunization("flu", "Influenza vaccine", "2024-03-03T10:00:00+00:00")
    heparin = fx.medication_administration(
        "heparin", "Heparin 5000 UNT Injection", "2024-03-02T08:00:00+00:00"
    )
    xray = chest_x_ray("cxr") | {"modality": [{"code": "DX", "display": "Digital Radiography"}]}
    state = evidence_from_fhir(
        fx.stay(plan, old_plan, appointment, vaccine, heparin, xray), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    drafted = {s.key: [sentence.text for sentence in s.sentences] for s in summary.sections}
    assert drafted["follow_up"] == [
        "Care plan (active): Discharge care plan; activities: Cardiac rehabilitation.",
        "Appointment: Cardiology clinic on 2024-03-19 (booked).",
    ]
    given = (
        "Given during the stay: Heparin 5000 UNT Injection on 2024-03-02; Influenza vaccine "
        "(vaccine) on 2024-03-03."
    )
    assert given in drafted["medications"]
    # No report of the study is in the record: the line says so, never a bare study that reads
    # as if its result were normal or elsewhere.
    assert (
        "Imaging: Chest X-ray (Digital Radiography) on 2024-03-01: no report found in the record."
        in drafted["results"]
    )
    assert all(s.verdict == "supported" for s in summary.sentences())


def follow_up(summary: Summary) -> list[str]:
    """Follow-up's lines, which the care plan tests read whole: what the patient goes back to."""
    return [s.text for s in summary.section("follow_up").sentences]


def test_an_older_care_plan_for_the_stays_reason_is_its_follow_up_and_answers_not_documented() -> (
    None
):
    """Addiction counselling planned two weeks before a detoxification stay is the plan the
    patient goes back to; a plan as old for another problem is not this stay's."""
    reason = fx.condition("abuse", "Dependent drug abuse (disorder)", code="6525002")
    stay = fx.encounter() | {"reasonCode": [{"coding": [{"code": "6525002"}]}]}

    def plan(plan_id: str, addresses: str, title: str) -> dict:
        return fx.care_plan(
            plan_id,
            title,
            encounter_id=None,
            activity="Counselling",
            period={"start": "2024-02-15T10:00:00+00:00"},
            addresses=[{"reference": f"Condition/{addresses}"}],
        )

    other = fx.condition("knee", "Osteoarthritis of knee", code="239873007", encounter_id=None)
    record = fx.bundle(
        fx.patient(),
        stay,
        reason,
        other,
        plan("addiction", "abuse", "Drug addiction therapy plan"),
        plan("knee-care", "knee", "Musculoskeletal care plan"),
    )
    summary = drafted_from(record)
    assert follow_up(summary) == [
        "Care plan (active, since 2024-02-15, before this stay): Drug addiction therapy plan, for "
        "Dependent drug abuse; activities: Counselling.",
        NO_NEW_FOLLOW_UP,
    ]
    review = [s.text for s in summary.section("needs_review").sentences]
    assert not any("Follow-up" in line for line in review if line.startswith("Not documented"))


def test_a_care_plan_made_at_the_recent_acute_visit_is_the_follow_up() -> None:
    """Counselling planned at the overdose visit two weeks before a detoxification stay is the
    plan the patient returns to; a plan made at a visit long before is not."""

    def plan(plan_id: str, encounter_id: str) -> dict:
        return fx.care_plan(
            plan_id,
            "Drug addiction therapy plan",
            encounter_id=encounter_id,
            activity="Counselling",
            period={"start": "2024-02-15T01:00:00+00:00"},
        )

    overdose = fx.encounter(
        "overdose", "2024-02-14T20:00:00+00:00", "2024-02-15T02:00:00+00:00", "EMER"
    )
    long_ago = fx.encounter(
        "long-ago", "2019-12-01T20:00:00+00:00", "2019-12-01T23:00:00+00:00", "EMER"
    )
    record = fx.stay(overdose, long_ago, plan("recent", "overdose"), plan("old", "long-ago"))
    assert follow_up(drafted_from(record)) == [
        "Care plan (active, since 2024-02-15, before this stay): Drug addiction therapy plan; "
        "activities: Counselling.",
        NO_NEW_FOLLOW_UP,
    ]


def test_a_plan_for_the_episodes_reason_in_effect_at_discharge_is_the_follow_up() -> None:
    """A nursing stay coded only as a transfer, after the knee operation's stay: physiotherapy
    planned for the knee injury at the emergency visit a week before, its period running two
    months past discharge, is the follow-up, in effect at discharge even though the record now
    calls it completed, which its end explains (a reader read "active" beside the record's
    "completed" as a contradiction); one that ended before discharge is not."""
    injury = fx.condition("acl", "Injury of anterior cruciate ligament", code="444470001")
    operation = fx.encounter(
        "ortho", "2024-02-25T10:00:00+00:00", "2024-03-01T10:00:00+00:00", "IMP"
    ) | {"reasonCode": [{"coding": [{"code": "444470001"}]}]}
    nursing = fx.encounter() | {"reasonCode": [{"text": "Patient transfer to skilled nursing"}]}

    physio = fx.care_plan(
        "physio",
        "Physiotherapy care plan",
        encounter_id=None,
        activity="Stretching exercises",
        period={"start": "2024-02-18T10:00:00+00:00", "end": "2024-05-01T10:00:00+00:00"},
        addresses=[{"reference": "Condition/acl"}],
        status="completed",
    )
    ended = physio | {"id": "ended", "period": {"start": "2024-02-18", "end": "2024-02-20"}}

    record = fx.bundle(fx.patient(), nursing, operation, injury, physio, ended)
    assert follow_up(drafted_from(record)) == [
        "Care plan (in effect at discharge, since 2024-02-18, before this stay, until "
        "2024-05-01): Physiotherapy care plan, for Injury of anterior cruciate ligament; "
        "activities: Stretching exercises.",
        NO_NEW_FOLLOW_UP,
    ]


def test_the_record_pull_and_the_scopes_ask_for_what_the_draft_reads() -> None:
    from fhir_mapping.resources import RECORD_TYPES
    from smartapp.access.oauth import READ_TYPES

    follow_up = {"CarePlan", "ServiceRequest", "Appointment"}
    given_and_imaged = {"Immunization", "MedicationAdministration", "ImagingStudy"}
    for wanted in (follow_up, given_and_imaged):
        assert wanted <= set(RECORD_TYPES) and wanted <= set(READ_TYPES)


def test_goals_of_a_care_plan_and_the_notes_word_on_the_condition_at_discharge() -> None:
    goal = fx.goal("walk", "Walk 30 minutes a day")
    plan = fx.care_plan("plan", "Cardiac rehabilitation plan", goal=[{"reference": "Goal/walk"}])
    note = fx.document_reference(
        "summary",
        fx.attachment("# Condition at discharge\nStable and ambulating independently.\n"),
    )
    summary = drafted_from(fx.stay(goal, plan, note))
    drafted = {s.key: [sentence.text for sentence in s.sentences] for s in summary.sections}
    assert drafted["follow_up"] == [
        "Care plan (active): Cardiac rehabilitation plan; goals: Walk 30 minutes a day."
    ]
    assert drafted["condition_at_discharge"] == ["Stable and ambulating independently."]
    assert all(s.verdict == "supported" for s in summary.sentences())


def test_an_imaging_study_with_its_days_report_says_the_report_not_its_absence() -> None:
    """A radiology report of the study's day with a conclusion: the study is not "no report
    found", and the report's conclusion is said."""
    xray = chest_x_ray("xray")
    report = fx.diagnostic_report("rad", "final", [], name="Chest X-ray report") | {
        "category": [{"coding": [{"code": "RAD"}]}],
        "effectiveDateTime": "2024-03-01T13:00:00+00:00",
        "conclusion": "No acute cardiopulmonary process.",
    }
    state = evidence_from_fhir(fx.stay(xray, report), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    results = [s.text for s in summary.section("results").sentences]
    assert "Imaging: Chest X-ray on 2024-03-01." in results
    assert "Imaging: Chest X-ray report on 2024-03-01: No acute cardiopulmonary process." in results
    assert not any("no report found" in line for line in results)


def test_the_self_care_education_of_the_episode_is_said_once_in_follow_up() -> None:
    """Education is routine care the Procedures section leaves out, but it is what the discharge
    teaches the patient for home (heart failure self-care, class 1): three readers of a
    heart-failure stay missed it. One line, each education once with its days; an assessment
    stays out."""
    follow_up = _follow_up_lines(
        fx.procedure(
            "hf1", "Heart failure education (procedure)", when="2024-03-02T10:00:00+00:00"
        ),
        fx.procedure(
            "hf2", "Heart failure education (procedure)", when="2024-03-04T10:00:00+00:00"
        ),
        fx.procedure("check", "Assessment of health and social care needs (procedure)"),
    )
    assert follow_up == [
        "Education given in the episode: Heart failure education on 2 days from 2024-03-02 to "
        "2024-03-04."
    ]
    assert (
        _follow_up_lines(fx.procedure("check", "Assessment of health and social care needs")) == []
    )


def _follow_up_lines(*resources: dict[str, Any]) -> list[str]:
    return [s.text for s in drafted_from(fx.stay(*resources)).section("follow_up").sentences]
