"""A screening questionnaire that came out positive (a PHQ-9 of 16 the week before admission) is
said under Key results with its severity, and handed over in Follow-up unless a care plan
addresses it; a later negative score, an older one or a negative one says nothing (hand-written
FHIR)."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

PHQ9, PHQ2, AUDIT_C, MORSE = "44261-6", "55758-7", "75626-2", "59460-6"
# As LOINC names them (and the record's Observation.code.text with them).
NAMES = {
    PHQ9: "Patient Health Questionnaire 9 item (PHQ-9) total score [Reported]",
    PHQ2: "Patient Health Questionnaire 2 item (PHQ-2) total score [Reported]",
    AUDIT_C: "Total score [AUDIT-C]",
    MORSE: "Fall risk total [Morse Fall Scale]",
}
WEEK_BEFORE = "2024-02-23T10:00:00+00:00"
HAND_OVER = (
    "Positive screen for depression (PHQ-9): no assessment or plan is documented: hand it over "
    "for assessment after discharge; before discharge, ask about thoughts of self-harm, which "
    "the depression questionnaire's total does not show."
)


def score(score_id: str, loinc: str, value: int, when: str = WEEK_BEFORE) -> dict[str, Any]:
    """A questionnaire's total score, as a survey Observation of an earlier visit (or, dated in
    the stay, of the stay)."""
    observation = fx.observation(
        score_id, NAMES[loinc], value, "{score}", loinc=loinc, when=when, category="survey"
    )
    del observation["referenceRange"]
    if when < fx.ADMIT:
        del observation["encounter"]
    return observation


def summary_of(*resources: dict[str, Any], gender: str = "female") -> Summary:
    patient = fx.patient() | {"gender": gender}
    record = fx.bundle(patient, fx.encounter(), *resources)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    return summarize_evidence(state, settings=PipelineSettings())


def texts(summary: Summary, section: str) -> list[str]:
    return [s.text for s in summary.section(section).sentences]  # type: ignore[arg-type]


def test_a_positive_phq9_the_week_before_admission_is_said_and_handed_over() -> None:
    """Its severity band said (Kroenke 2001: 15 to 19, moderately severe), its cut-off not (a
    number the record does not hold); the line is supported by the score it cites. Handed over,
    it asks about thoughts of self-harm before discharge, which a total score does not show
    (the PHQ-9's item 9 predicts suicide attempts: Simon et al. 2013)."""
    summary = summary_of(score("phq9", PHQ9, 16))
    (line,) = summary.section("results").sentences
    assert line.text == (
        "Positive screen: PHQ-9 16 on 2024-02-23, before admission (depression, moderately severe)."
    )
    assert line.verdict == "supported" and not line.flags
    (hand_over,) = summary.section("follow_up").sentences
    assert hand_over.text == HAND_OVER and hand_over.verdict == "supported"


def test_a_later_negative_score_of_the_same_questionnaire_clears_it() -> None:
    """A screen is a snapshot: a PHQ-9 of 4 in the stay says the depression screen is now
    negative, whatever the week before said."""
    summary = summary_of(score("old", PHQ9, 16), score("now", PHQ9, 4, when=fx.IN_STAY))
    assert not [text for text in texts(summary, "results") if "screen" in text]
    assert HAND_OVER not in texts(summary, "follow_up")


def test_a_negative_or_an_older_positive_score_says_nothing() -> None:
    """Only the days before admission that the record's baseline reads (two weeks): a PHQ-9 of
    a year before says nothing of the patient going home."""
    negative = summary_of(score("low", PHQ9, 9))
    year_before = summary_of(score("old", PHQ9, 20, when="2023-03-01T10:00:00+00:00"))
    for summary in (negative, year_before):
        assert not [text for text in texts(summary, "results") if "screen" in text]
        assert not [text for text in texts(summary, "follow_up") if "screen" in text]


def test_the_alcohol_screen_reads_its_cut_off_by_sex() -> None:
    """AUDIT-C is positive from 3 for a woman and from 4 for a man (Bradley 2007)."""
    woman = summary_of(score("audit", AUDIT_C, 3))
    man = summary_of(score("audit", AUDIT_C, 3), gender="male")
    assert texts(woman, "results") == [
        "Positive screen: AUDIT-C 3 on 2024-02-23, before admission (unhealthy alcohol use, by "
        "the cut-off for women)."
    ]
    assert not [text for text in texts(man, "results") if "screen" in text]


def test_a_phq2_is_said_only_where_no_phq9_answered_it_that_day_or_later() -> None:
    both = summary_of(score("two", PHQ2, 3), score("nine", PHQ9, 12))
    alone = summary_of(score("two", PHQ2, 4))
    assert texts(both, "results") == [
        "Positive screen: PHQ-9 12 on 2024-02-23, before admission (depression, moderate)."
    ]
    assert texts(alone, "results") == [
        "Positive screen: PHQ-2 4 on 2024-02-23, before admission (depression)."
    ]


def test_two_positive_screens_are_one_line_and_one_hand_over() -> None:
    summary = summary_of(score("phq9", PHQ9, 21), score("audit", AUDIT_C, 5))
    assert texts(summary, "results") == [
        "Positive screens: PHQ-9 21 on 2024-02-23, before admission (depression, severe); "
        "AUDIT-C 5 on 2024-02-23, before admission (unhealthy alcohol use, by the cut-off for "
        "women)."
    ]
    assert texts(summary, "follow_up") == [
        "Positive screens for depression (PHQ-9) and unhealthy alcohol use (AUDIT-C): no "
        "assessment or plan is documented: hand them over for assessment after discharge; "
        "before discharge, ask about thoughts of self-harm, which the depression questionnaire's "
        "total does not show."
    ]
    alcohol = summary_of(score("audit", AUDIT_C, 5))
    (hand_over,) = alcohol.section("follow_up").sentences
    assert "self-harm" not in hand_over.text  # asked after a depression screen only


def test_a_care_plan_for_depression_answers_the_hand_over_not_the_result() -> None:
    """The plan the record made for what the screen found is its follow-up; the score is
    still said."""
    plan = fx.care_plan("mh", "Depression care management")
    summary = summary_of(score("phq9", PHQ9, 16), plan)
    assert [text for text in texts(summary, "results") if text.startswith("Positive screen")]
    assert HAND_OVER not in texts(summary, "follow_up")


def test_a_record_that_names_the_questionnaire_otherwise_is_said_in_its_own_words() -> None:
    """The short name only where the record wrote it: "PHQ-9" beside a record's "Depression
    questionnaire total" would cite a 9 the record does not hold."""
    renamed = score("phq9", PHQ9, 16)
    renamed["code"]["text"] = "Depression questionnaire total"
    (line,) = summary_of(renamed).section("results").sentences
    assert line.text.startswith("Positive screen: Depression questionnaire total 16 on")
    assert line.verdict == "supported"


def test_a_fall_risk_the_record_calls_moderate_is_said_and_handed_over() -> None:
    """A Morse Fall Scale of 42 the week before a nursing-home discharge is a risk the discharge
    plans for (the record's own level calls 25 to 45 moderate, 45 or more high); 24 or less
    says nothing. A care plan for falls answers the hand-over."""
    moderate = summary_of(score("morse", MORSE, 42))
    assert texts(moderate, "results") == [
        "Positive screen: Morse Fall Scale 42 on 2024-02-23, before admission (risk of falling, "
        "moderate)."
    ]
    assert texts(moderate, "follow_up") == [
        "Positive screen for risk of falling (Morse Fall Scale): no assessment or plan is "
        "documented: hand it over for assessment after discharge."
    ]
    (high,) = summary_of(score("morse", MORSE, 55)).section("results").sentences
    assert high.text.endswith("(risk of falling, high).") and high.verdict == "supported"
    low = summary_of(score("morse", MORSE, 24))
    assert not [text for text in texts(low, "results") if "screen" in text]
    planned = summary_of(score("morse", MORSE, 42), fx.care_plan("falls", "Fall prevention"))
    assert not [text for text in texts(planned, "follow_up") if "screen" in text]
