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
    xray = {
        "resourceType": "ImagingStudy",
        "id": "cxr",
        "status": "available",
        "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "encounter": {"reference": f"Encounter/{fx.ENCOUNTER_ID}"},
        "started": "2024-03-01T12:00:00+00:00",
        "modality": [{"code": "DX", "display": "Digital Radiography"}],
        "procedureCode": [{"text": "Chest X-ray"}],
    }
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
    assert "Imaging: Chest X-ray (Digital Radiography) on 2024-03-01." in drafted["results"]
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
    months past discharge, is the follow-up, active as of discharge even though the record now
    calls it completed; one that ended before discharge is not."""
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
        "Care plan (active, since 2024-02-18, before this stay): Physiotherapy care plan, for "
        "Injury of anterior cruciate ligament; activities: Stretching exercises.",
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


def _complaints(stay_reason: str | None, own: str) -> tuple[list[str], list[list[str]]]:
    """The stay's header lines and their flags' reasons, from a record whose notes state the
    chief complaints below."""

    def note(note_id: str, said: str, encounter_id: str, written: str) -> dict:
        content = fx.attachment(f"# Chief Complaint\n{said}\n")
        return fx.document_reference(note_id, content, encounter_id=encounter_id) | {
            "date": written
        }

    stay = fx.encounter() | ({"reasonCode": [{"text": stay_reason}]} if stay_reason else {})
    visits = [
        fx.encounter(
            f"visit-{year}", f"{year}-01-10T09:00:00+00:00", f"{year}-01-10T10:00:00+00:00", "AMB"
        )
        for year in (2020, 2023)
    ]
    notes = [
        note("oldest", "- Chest pain", "visit-2020", "2020-01-10T09:30:00+00:00"),
        note("latest", "- Blurred Vision\n- Hunger", "visit-2023", "2023-01-10T09:30:00+00:00"),
        note("own", own, fx.ENCOUNTER_ID, "2024-03-01T12:00:00+00:00"),
    ]
    record = fx.bundle(fx.patient(), stay, *visits, *notes)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s for s in summary.section("stay").sentences if s.text.startswith("Chief")]
    return [s.text for s in lines], [[flag.reason for flag in s.flags] for s in lines]


def test_a_chief_complaint_in_the_words_of_the_last_note_before_the_stay_is_template_text() -> None:
    """Templated notes carry a complaint forward from visit to visit ("Blurred vision" in every
    note since 2010, beside a heart attack): a complaint in the same words as the patient's
    latest note before the episode (2023's, not 2020's) is template text, which readers called
    misleading beside the stay's coded reason; it is left out there, and the stay's new
    complaint stays. A stay that codes no reason of its own and whose notes only repeat has the
    carried line as all there is: said, naming the stay's note as its source, and flagged to
    confirm."""
    repeated = (
        "Chief complaint in this stay's note, in the same words as the patient's last note "
        "before it: "
    )
    infarction = "Acute myocardial infarction"
    assert _complaints(infarction, "- Blurred Vision\n- Chest pain") == (
        ["Chief complaint: Chest pain"],
        [[]],
    )
    assert _complaints(infarction, "- Blurred Vision\n- Hunger") == ([], [])
    assert _complaints(None, "- Chest pain\n- Hunger") == (["Chief complaint: Chest pain"], [[]])
    lines, flags = _complaints(None, "- Blurred Vision\n- Hunger")
    assert lines == [f"{repeated}Blurred Vision; Hunger"]
    assert flags == [
        [
            "the same words as the patient's note of 2023-01-10, written before this stay, and "
            "the stay codes no reason of its own: confirm what brought the patient in"
        ]
    ]


def test_the_latest_note_before_the_episode_is_read_and_never_an_episodes_or_a_voided_one() -> None:
    """The note the complaints are compared with: the latest before the episode, of no encounter
    of it, neither entered in error nor an AI draft; the pull asks for it with one sorted
    first-page search before the notes it reads anyway."""
    from fhir_mapping.pull_plan import latest_note_search, stay_window
    from fhir_mapping.record import map_record

    def note(note_id: str, written: str, **extra: object) -> dict:
        content = fx.attachment("# Chief Complaint\n- Hunger\n")
        return fx.document_reference(note_id, content, encounter_id="visit") | {
            "date": written,
            **extra,
        }

    visit = fx.encounter("visit", "2023-01-10T09:00:00+00:00", "2023-01-10T10:00:00+00:00", "AMB")
    kept = note("kept", "2023-01-10T09:30:00+00:00")
    voided = note("voided", "2023-06-01T09:30:00+00:00", status="entered-in-error")
    drafted = note(
        "drafted",
        "2023-07-01T09:30:00+00:00",
        meta={"security": [{"code": "AIAST"}]},
    )
    own = fx.document_reference("own", fx.attachment("# Chief Complaint\n- Hunger\n"))
    mapped = map_record(fx.bundle(fx.patient(), fx.encounter(), visit, kept, voided, drafted, own))
    assert mapped.earlier_note is not None
    assert [ref.resource for ref in mapped.earlier_note.sources] == ["DocumentReference/kept"]
    window = stay_window(fx.encounter(), 24, 90)
    assert window is not None
    search = latest_note_search("p1", window)
    assert (search.resource_type, search.params) == (
        "DocumentReference",
        {
            "patient": "Patient/p1",
            "date": f"lt{window.episode_from}",
            "_sort": "-date",
            "_count": "1",
        },
    )


@pytest.mark.parametrize(
    ("conditions", "said"),
    [
        (
            (fx.condition("a", "Acute appendicitis (disorder)"),),
            "None besides this stay's own (see Discharge diagnoses).",
        ),
        (
            (
                fx.condition("a", "Acute appendicitis (disorder)"),
                fx.condition(
                    "s",
                    "Unhealthy alcohol drinking behavior (finding)",
                    code="10939881000119105",
                    encounter_id=None,
                    onset="2024-02-26T10:00:00+00:00",
                ),
            ),
            None,
        ),
        ((), None),
    ],
    ids=["only-the-stays-own", "beside-social-findings-shown", "none-at-all"],
)
def test_a_problem_list_with_only_the_stays_own_diagnoses_is_not_called_undocumented(
    conditions: tuple[dict, ...], said: str | None
) -> None:
    """A list whose only active entries are this stay's diagnoses says so under its heading; two
    readers read "Not documented: Active problems" beside such a chart as contradicting it.
    Beside social findings that Social history shows (an alcohol use), two paired readers read
    "none besides" as a list called complete that is not, and preferred "Not documented"; so
    does a record with no diagnosis at all, in Needs review's line."""
    state = evidence_from_fhir(fx.stay(*conditions), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    problems = summary.section("active_problems")
    assert problems.sentences == []
    review = " ".join(s.text for s in summary.section("needs_review").sentences)
    if said is None:
        assert problems.named_in_needs_review and "Active problems" in review
    else:
        assert problems.empty_reason == said
        assert not problems.named_in_needs_review and "Active problems" not in review


def test_social_history_left_out_is_not_called_undocumented() -> None:
    """A note's Social History that the draft leaves out (an age the patient has not reached is
    the template's) is still documented: the section says none bears on discharge, and the Not
    documented line does not name it."""
    note = fx.document_reference(
        "n1", fx.attachment("# Social History\nPatient quit smoking at age 90.\n")
    )
    state = evidence_from_fhir(fx.stay(note), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    social = summary.section("social_history")
    assert social.sentences == []
    assert social.empty_reason == "None recorded that bears on discharge planning."
    assert not social.named_in_needs_review
    review = [s.text for s in summary.section("needs_review").sentences]
    assert not any("Social history" in line for line in review)


def test_templated_note_text_is_left_out_of_the_draft() -> None:
    """Synthea-style notes: "No complaints." as the chief complaint, and a line that only says who
    the patient is, written again in every note of the stay."""
    note = (
        "# History of Present Illness\nAda is a 73 year-old white female. "
        "She recovered well after the valve surgery.\n"
    )
    first = fx.document_reference(
        "n1", fx.attachment(f"# Chief Complaint\nNo complaints.\n\n{note}")
    )
    second = fx.document_reference("n2", fx.attachment(note))
    state = evidence_from_fhir(fx.stay(first, second), settings=PipelineSettings())
    summary = summarize_evidence(
        state, ratio=1.0, salience=lambda text: ([], []), settings=PipelineSettings()
    )
    stay = [s.text for s in summary.section("stay").sentences]
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert not any(line.startswith("Chief complaint") for line in stay)
    assert not any("73 year-old" in line for line in course)
    assert course.count("She recovered well after the valve surgery.") == 1


def test_snomed_semantic_tags_are_not_shown_and_a_uuid_is_no_medical_record_number() -> None:
    from pipeline.text.rendering import plain_term

    assert plain_term("Sepsis (disorder)") == "Sepsis"
    assert plain_term("Transplantation of kidney regime (regime/therapy)") == (
        "Transplantation of kidney regime"
    )
    assert plain_term("Inpatient stay (IMP)") == "Inpatient stay (IMP)"  # not a semantic tag
    patient = fx.patient() | {
        "id": "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
        "identifier": [
            {
                "type": {"coding": [{"code": "MR"}]},
                "value": "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
            }
        ],
    }
    state = evidence_from_fhir(
        fx.bundle(patient, fx.encounter(patient_id=patient["id"])), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (header,) = [s.text for s in summary.section("stay").sentences if "born" in s.text]
    assert header.endswith("medical record number not documented.")


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
