"""After a condition whose guideline asks the discharge to arrange a review (an infarction, heart
failure, a substance use disorder), the draft's Follow-up says what to arrange where the record
arranges nothing (hand-written FHIR)."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

NSTEMI = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction (disorder)")
CARDIAC_REVIEW = (
    "Follow-up for Acute non-ST segment elevation myocardial infarction: no appointment or "
    "referral is documented: arrange a cardiology review, and a referral to cardiac "
    "rehabilitation."
)


def follow_up(*resources: dict[str, Any]) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    return [s.text for s in summary.section("follow_up").sentences]


def test_an_infarction_of_the_stay_with_no_review_arranged_names_the_review() -> None:
    """The ACS guideline refers every patient to cardiac rehabilitation before discharge (class
    1); readers added the cardiology review by hand to every infarction draft. The line states
    what is missing, supported by the diagnosis it cites, and is no flag."""
    state = evidence_from_fhir(fx.stay(NSTEMI), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = summary.section("follow_up").sentences
    assert line.text == CARDIAC_REVIEW
    assert not line.flags and line.verdict == "supported"
    assert {ref.resource for i in line.citations for ref in state.fact(i).sources} == {
        "Condition/mi"
    }


def test_heart_failure_asks_for_a_review_within_seven_days_and_addiction_for_treatment() -> None:
    failing = fx.condition("hf", "Chronic congestive heart failure (disorder)")
    abuse = fx.condition("sud", "Dependent drug abuse (disorder)")
    assert follow_up(failing, abuse) == [
        "Follow-up for Chronic congestive heart failure: no appointment or referral is "
        "documented: arrange a review within seven days of discharge.",
        "Follow-up for Dependent drug abuse: no appointment or referral is documented: arrange a "
        "referral to continuing addiction treatment.",
    ]


def test_a_booked_appointment_or_a_referral_answers_it() -> None:
    clinic = fx.appointment("clinic", "Cardiology clinic")
    texts = follow_up(NSTEMI, clinic)
    assert CARDIAC_REVIEW not in texts
    assert any("Cardiology clinic" in text for text in texts)


def test_a_history_of_infarction_or_one_on_the_problem_list_asks_nothing() -> None:
    """Only the stay's own diagnoses: a "History of myocardial infarction", or an infarction
    recorded years before and still on the problem list, is no reason for this stay's review."""
    history = fx.condition("h", "History of myocardial infarction (situation)")
    old = fx.condition(
        "old",
        "Acute non-ST segment elevation myocardial infarction (disorder)",
        encounter_id=None,
        onset="2015-06-01",
    )
    assert not [text for text in follow_up(history, old) if text.startswith("Follow-up for")]


def test_a_care_plan_for_the_addiction_is_its_continuing_treatment_but_no_cardiac_review() -> None:
    """Addiction counselling the patient returns to is the continuing treatment the line would
    ask for; a heart failure self-management plan is no visit within seven days."""
    abuse = fx.condition("sud", "Dependent drug abuse (disorder)")
    failing = fx.condition("hf", "Chronic congestive heart failure (disorder)")
    counselling = fx.care_plan(
        "addiction",
        "Drug addiction therapy plan",
        activity="Counselling",
        addresses=[{"reference": "Condition/sud"}],
    )
    self_care = fx.care_plan(
        "hf-plan",
        "Heart failure self management plan",
        activity="Low salt diet education",
        addresses=[{"reference": "Condition/hf"}],
    )
    texts = [t for t in follow_up(abuse, failing, counselling, self_care) if "Follow-up for" in t]
    assert texts == [
        "Follow-up for Chronic congestive heart failure: no appointment or referral is "
        "documented: arrange a review within seven days of discharge."
    ]


def test_sleep_apnea_asks_for_the_review_of_positive_airway_pressure_in_its_first_months() -> None:
    """CMS NCD 240.4 and AASM 2019: positive airway pressure is re-evaluated for use and benefit
    between its first and third month; readers of both sleep apnoea drafts found no such
    review, and nothing asking for one; three more no word on drowsy driving, which the
    patient is warned of until treatment works (ATS 2013). In words: a draft's digits are
    checked."""
    apnea = fx.condition("osa", "Obstructive sleep apnea syndrome (disorder)")
    assert follow_up(apnea) == [
        "Follow-up for Obstructive sleep apnea syndrome: no appointment or referral is "
        "documented: arrange a review of positive airway pressure use and benefit between the "
        "first and third month of treatment, and advise on the risk of drowsy driving until "
        "treatment works."
    ]
    booked = follow_up(apnea, fx.appointment("sleep", "Sleep clinic"))
    assert not any(line.startswith("Follow-up for Obstructive") for line in booked)
