"""After an operation, the draft's Follow-up says who reviews the patient, or that the record does
not say (hand-written FHIR: a recorded operation, an implied one, and the arrangements that
answer it)."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

APPENDECTOMY = fx.procedure("op", "Excision of appendix", when="2024-03-01T12:00:00+00:00")
NO_REVIEW = (
    "Post-operative review: no appointment or referral is documented after Excision of appendix "
    "on 2024-03-01: arrange who reviews the patient, and when; give the wound, activity and "
    "return advice."
)


def follow_up(*resources: dict[str, Any]) -> list[Sentence]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    return next(s.sentences for s in summary.sections if s.key == "follow_up")


def test_an_operation_with_no_review_arranged_says_so_in_follow_up() -> None:
    """Discharge after surgery names the post-operative review (42 CFR 482.43(c)); where the
    record arranges none, the line says so and what to arrange, citing the operation, with the
    wound, activity and return advice the discharge gives (readers wrote it by hand after every
    operation). Like every "Not documented", it is no flag to acknowledge: the signer adds the
    review."""
    lines = follow_up(APPENDECTOMY)
    assert [line.text for line in lines] == [NO_REVIEW]
    assert not lines[0].flags
    assert lines[0].citations


def test_a_booked_appointment_after_discharge_answers_it() -> None:
    clinic = fx.appointment("clinic", "Surgical clinic")
    texts = [line.text for line in follow_up(APPENDECTOMY, clinic)]
    assert NO_REVIEW not in texts
    assert any("Surgical clinic" in text for text in texts)


def test_a_care_plans_instructions_are_no_review() -> None:
    """Rest and wound care are what to do at home, not who sees the patient next."""
    plan = fx.care_plan("plan", "Minor surgery care management", activity="Recommendation to rest")
    texts = [line.text for line in follow_up(APPENDECTOMY, plan)]
    assert NO_REVIEW in texts


def test_a_stay_without_an_operation_has_no_such_line() -> None:
    """Routine care and diagnostics are no operation: nothing is asked of them."""
    assessment = fx.procedure("check", "Assessment of health and social care needs")
    x_ray = fx.procedure("cxr", "Plain chest X-ray")
    assert not [line for line in follow_up(assessment, x_ray) if "Post-operative" in line.text]


def test_an_operation_the_record_only_implies_asks_for_its_review_too() -> None:
    """A "History of appendectomy" coded during the stay with no procedure recorded is the
    stay's implied treatment; the patient still needs the review after it."""
    history = fx.condition("history", "History of appendectomy", code="161615003")
    texts = [line.text for line in follow_up(history)]
    assert texts == [
        "Post-operative review: no appointment or referral is documented after appendectomy on "
        "2024-03-01: arrange who reviews the patient, and when; give the wound, activity and "
        "return advice."
    ]


def test_after_a_kidney_transplant_the_line_names_how_the_graft_is_monitored() -> None:
    """KDIGO 2009 (13.1.1): serum creatinine two to three times a week to the end of the first
    month, then weekly to the end of the third: what the review a transplant's discharge
    arranges is for. In words, so that no digit of the line goes unchecked; another operation
    names no graft."""
    transplant = fx.procedure("tx", "Renal transplant", when="2024-03-01T12:00:00+00:00")
    (line,) = [line for line in follow_up(transplant) if "Post-operative" in line.text]
    assert line.text == (
        "Post-operative review: no appointment or referral is documented after Renal transplant "
        "on 2024-03-01: arrange who reviews the patient, and when, and the graft's monitoring: "
        "serum creatinine two to three times a week until the end of the first month after the "
        "transplant, then weekly to the end of the third (KDIGO kidney transplant guideline); "
        "give the wound, activity and return advice."
    )
    assert line.verdict == "supported"
    assert [line.text for line in follow_up(APPENDECTOMY)] == [NO_REVIEW]


def test_an_operation_of_an_earlier_stay_of_the_episode_asks_for_the_review_too() -> None:
    """The patient goes home from the stay after the operation's (a ward or nursing stay days
    after a valve replacement): the review after that operation is still this discharge's to
    arrange, as a reader of a nursing stay after knee surgery found missing."""
    valve_stay = fx.encounter(
        "valve-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | {"reasonCode": [{"text": "Aortic valve stenosis"}]}
    valve = fx.procedure(
        "avr", "Replacement of aortic valve", "valve-stay", "2024-02-21T09:00:00+00:00"
    )
    texts = [line.text for line in follow_up(valve_stay, valve)]
    assert (
        "Post-operative review: no appointment or referral is documented after Replacement of "
        "aortic valve on 2024-02-21: arrange who reviews the patient, and when; give the wound, "
        "activity and return advice." in texts
    )


def test_a_procedure_its_name_calls_surgical_is_an_operation() -> None:
    """A surgical manipulation of the knee, done under anaesthesia, asks for the review as an
    excision does."""
    manipulation = fx.procedure(
        "mua", "Surgical manipulation of joint of knee", when="2024-03-01T12:00:00+00:00"
    )
    assert any("Post-operative review" in line.text for line in follow_up(manipulation))
