"""The principal problem: a status or administrative term is never the principal diagnosis on
its own; when the record names no clinical problem, a flagged line says what the stay was coded
as and what was done. Coded template lines are not quoted as course."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def summary_of(*resources: dict[str, Any], reason: str | None = None) -> Summary:
    stay = fx.encounter() | ({"reasonCode": [{"text": reason}]} if reason else {})
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, *resources), settings=PipelineSettings()
    )
    return summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())


def history_of(event: str, recorded: str = "2024-03-01T12:00:00Z") -> dict[str, Any]:
    """A "History of ``event``" situation recorded at ``recorded`` (by default the day of
    admission): the coded after-state whose date says whether the stay did it."""
    return fx.condition("h", f"History of {event} (situation)", onset=recorded)


def test_a_request_for_care_that_was_given_is_an_elective_admission_not_a_gap() -> None:
    """ "Sterilization requested" and a ligation done: the request is the reason for the stay,
    said plainly and not flagged; the "History of tubal ligation" coded that day is the
    ligation's after-state, cited on the line, and the request resolved that day is no active
    problem."""
    requested = fx.condition(
        "r", "Sterilization requested (situation)", onset="2024-02-01T12:00:00Z", encounter_id=None
    ) | {
        "abatementDateTime": "2024-03-01T15:00:00Z",
        "clinicalStatus": {"coding": [{"code": "resolved"}]},
    }
    history = history_of("tubal ligation")
    summary = summary_of(
        fx.procedure("p", "Ligation of bilateral fallopian tubes (procedure)"),
        history,
        requested,
        reason="Sterilization requested (situation)",
    )
    (line,) = summary.section("diagnoses").sentences
    # The clinical problem named, as a hospitalist writes it; the code the request came as,
    # said once, in brackets.
    assert line.text == (
        "Elective sterilization: Ligation of bilateral fallopian tubes on 2024-03-01 (the reason "
        "for the stay, an elective admission coded as Sterilization requested)."
    )
    assert not line.flags and len(line.citations) == 3
    assert summary.section("active_problems").sentences == []


def test_a_request_with_no_procedure_recorded_stays_a_flagged_gap() -> None:
    summary = summary_of(reason="Sterilization requested (situation)")
    first = summary.section("diagnoses").sentences[0]
    assert first.text == (
        "Principal diagnosis not documented: the stay is coded only as Sterilization requested; "
        "procedures of the episode: not documented."
    )
    assert [flag.code for flag in first.flags] == ["principal_not_documented"]


def test_a_status_recorded_during_the_stay_is_what_the_stay_did_said_first() -> None:
    """ "Awaiting transplantation of kidney", then "History of renal transplant" recorded on day
    two, no procedure: the draft leads with the transplant the record implies, dated, then says
    the principal diagnosis is not documented; one flagged line, the status cited on it and not
    listed again as a diagnosis."""
    summary = summary_of(
        history_of("renal transplant", recorded="2024-03-02T09:00:00Z"),
        reason="Awaiting transplantation of kidney (situation)",
    )
    (first,) = summary.section("diagnoses").sentences
    assert first.text == (
        "Done in this stay as the record implies it (see Procedures): renal transplant on "
        "2024-03-02. Principal diagnosis not documented: the stay is coded only as Awaiting "
        "transplantation of kidney; procedures of the episode: not documented."
    )
    assert [flag.reason for flag in first.flags] == [
        "no clinical diagnosis is recorded as the reason for this stay, and no procedure of the "
        "episode is recorded: confirm the treatment the record implies, its date, and the "
        "diagnosis it treats"
    ]
    # The Procedures section, right after, says it too ("None recorded" contradicted the line),
    # and the course starts with it, where "Admitted for Awaiting transplantation of kidney"
    # read as if nothing was done. Why the record implies it is said there only: readers read
    # the same hedge three times as noise.
    implied = (
        "Done as the record implies it, with no procedure recorded: renal transplant on "
        '2024-03-02 (its "History of" recorded that day).'
    )
    assert [s.text for s in summary.section("procedures").sentences] == [implied]
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert course[0] == (
        "Admitted on 2024-03-01 (coded as Awaiting transplantation of kidney): renal transplant "
        "on 2024-03-02 (implied by the record: see Procedures)."
    )
    hedged = [s for s in summary.sentences() if "no procedure recorded" in s.text]
    assert [s.text for s in hedged] == [implied]
    assert summary.section("hospital_course").sentences[0].verdict == "supported"


def test_a_request_for_care_the_record_implies_was_given_is_an_elective_admission_flagged() -> None:
    """ "Sterilization requested" and "History of tubal ligation" recorded that day, with no
    procedure: the elective admission led by the request the record documents (an inference
    never leads the diagnosis), the ligation as the record implies it, flagged to confirm; never
    "Principal diagnosis not documented"."""
    summary = summary_of(history_of("tubal ligation"), reason="Sterilization requested (situation)")
    (first,) = summary.section("diagnoses").sentences
    assert first.text == (
        "Sterilization requested: an elective admission, the reason for the stay (no disease "
        "coded); done: tubal ligation on 2024-03-01 (implied by the record: see Procedures)."
    )
    assert [flag.code for flag in first.flags] == ["implied_treatment"]


def test_the_history_of_the_stays_own_event_is_no_treatment_the_record_implies() -> None:
    """ "History of myocardial infarction" coded the day of the infarction is its aftermath:
    never "done as the record implies it"."""
    summary = summary_of(
        fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)"),
        history_of("myocardial infarction"),
    )
    assert not any("implies" in s.text for s in summary.sentences())


def test_a_clinical_reason_is_the_principal_diagnosis_and_no_line_is_added() -> None:
    summary = summary_of(
        fx.condition("a", "Acute appendicitis (disorder)"), reason="Acute appendicitis (disorder)"
    )
    texts = [s.text for s in summary.section("diagnoses").sentences]
    assert not any(text.startswith("Principal diagnosis not documented") for text in texts)
    assert len([text for text in texts if text.startswith("Acute appendicitis")]) == 1


def test_a_note_line_generated_from_codes_is_not_quoted_as_course() -> None:
    note = fx.document_reference(
        "n",
        fx.attachment(
            "# Assessment and Plan\n"
            "Patient is presenting with history of tubal ligation (situation).\n"
            "She tolerated a regular diet on the second day."
        ),
    )
    stay = fx.encounter()
    state = evidence_from_fhir(fx.bundle(fx.patient(), stay, note), settings=PipelineSettings())
    summary = summarize_evidence(state, ratio=1.0, settings=PipelineSettings())
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert "She tolerated a regular diet on the second day." in course
    assert not any("(situation)" in text for text in course)


def test_a_history_of_the_stays_own_event_is_cited_on_its_line_not_listed_again() -> None:
    """ "History of myocardial infarction" recorded the day of the infarction is the coded
    aftermath of the stay's own event; a history of something else stays a diagnosis."""
    infarction = "Acute non-ST segment elevation myocardial infarction (disorder)"
    stay = fx.encounter() | {"reasonCode": [{"coding": [{"code": "401314000"}]}]}
    record = fx.bundle(
        fx.patient(),
        stay,
        fx.condition("mi", infarction, code="401314000"),
        fx.condition("h", "History of myocardial infarction (situation)", code="399211009"),
        fx.condition("cabg", "History of coronary artery bypass grafting", code="399261000"),
    )
    summary = summarize_evidence(
        evidence_from_fhir(record, settings=PipelineSettings()),
        salience=lambda text: ([], []),
        settings=PipelineSettings(),
    )
    lines = summary.section("diagnoses").sentences
    assert [s.text.split(":")[0] for s in lines] == [
        "Acute non-ST segment elevation myocardial infarction",
        "History of coronary artery bypass grafting",
    ]
    assert len(lines[0].citations) == 2  # the infarction and its "History of", on one line


def test_what_the_notes_say_of_substance_use_is_quoted_once_under_social_history() -> None:
    """The coded "Dependent drug abuse" names no substance; the notes' "documented history of
    opioid addiction" does, and templated notes repeat it."""
    social = (
        "# Social History\nPatient is single. Patient has a documented history of opioid "
        "addiction. Patient has never smoked.\n"
    )
    notes = [fx.document_reference(f"n{i}", fx.attachment(social)) for i in (1, 2)]
    summary = summary_of(*notes)
    assert [s.text for s in summary.section("social_history").sentences] == [
        "Patient has a documented history of opioid addiction.",
        "Patient has never smoked.",
    ]
    assert all(s.verdict == "supported" for s in summary.section("social_history").sentences)


def test_a_history_of_a_procedure_coded_during_the_stay_is_a_treatment_the_record_implies() -> None:
    """ "History of coronary artery bypass grafting" coded on the day of admission, and no
    bypass in the record: the bypass is implied, said so and flagged; a history coded before the
    stay is a plain diagnosis, and one whose procedure is recorded is that procedure's coded
    after-state: cited on the principal diagnosis's line, the bypass named under Procedures."""
    during = history_of("coronary artery bypass grafting")
    summary = summary_of(during, reason="Coronary arteriosclerosis (disorder)")
    (line,) = [s for s in summary.section("diagnoses").sentences if "bypass" in s.text]
    assert line.text == (
        "History of coronary artery bypass grafting: recorded 2024-03-01, during this stay: a "
        "treatment the record implies, with no procedure recorded."
    )
    assert [flag.code for flag in line.flags] == ["implied_treatment"]
    done = fx.procedure("cabg", "Coronary artery bypass grafting (procedure)")
    summary = summary_of(during, done, reason="Coronary arteriosclerosis (disorder)")
    (line,) = summary.section("diagnoses").sentences
    assert line.text.startswith("Coronary arteriosclerosis: principal diagnosis") and not line.flags
    assert len(line.citations) == 2
    (procedure,) = summary.section("procedures").sentences
    assert procedure.text.startswith("Coronary artery bypass grafting (completed)")


def test_a_procedure_that_may_be_the_history_never_lets_the_line_say_none_is_recorded() -> None:
    """ "Ligation of bilateral fallopian tubes" in the episode beside "History of tubal
    ligation": the line never says that no procedure is recorded."""
    history = history_of("tubal ligation")
    ligation = fx.procedure("l", "Ligation of bilateral fallopian tubes (procedure)")
    summary = summary_of(history, ligation, reason="Sterilization requested (situation)")
    lines = [s.text for s in summary.section("diagnoses").sentences]
    assert not any("no procedure recorded" in line for line in lines)


def test_a_clinical_reason_with_no_condition_is_still_the_principal_diagnosis() -> None:
    """ "Appendicitis" coded on the encounter, no Condition for it, and "History of
    appendectomy" recorded in the stay: the list opens with the appendicitis."""
    history = history_of("appendectomy")
    summary = summary_of(history, reason="Appendicitis (disorder)")
    lines = [s.text for s in summary.section("diagnoses").sentences]
    assert lines[0] == (
        "Appendicitis: principal diagnosis, the reason for the stay (coded on the encounter; no "
        "condition record)."
    )
    assert lines[1].startswith("History of appendectomy: recorded 2024-03-01, during this stay")


def test_a_statement_about_an_age_the_patient_has_not_reached_is_left_out() -> None:
    """The patient is 73 at this stay: "quit smoking at age 80" is a template's line, not hers."""
    social = (
        "# Social History\nPatient quit smoking at age 80. Patient quit drinking at the age of "
        "40.\n"
    )
    summary = summary_of(fx.document_reference("n", fx.attachment(social)))
    assert [s.text for s in summary.section("social_history").sentences] == [
        "Patient quit drinking at the age of 40."
    ]
