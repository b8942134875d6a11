"""Vital signs in the draft: at admission and at discharge, the latest when the last day has
none, the worst out of range between, and never another stay's."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.results_support import (
    lab,
    results_of,
    vital,
)


def test_vital_signs_at_admission_and_at_discharge() -> None:
    def vital(obs_id: str, name: str, value: float, unit: str, loinc: str, when: str) -> dict:
        observation = lab(obs_id, name, value, unit, loinc, when)
        observation["category"] = [{"coding": [{"code": "vital-signs"}]}]
        return observation

    state = evidence_from_fhir(
        fx.stay(
            vital("hr1", "Heart rate", 118, "/min", "8867-4", "2024-03-01T10:30:00+00:00"),
            vital("t1", "Body temperature", 38.4, "Cel", "8310-5", "2024-03-01T10:30:00+00:00"),
            vital("hr2", "Heart rate", 76, "/min", "8867-4", "2024-03-05T09:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert [s.text for s in summary.section("results").sentences] == [
        "Vital signs at admission (2024-03-01): Heart rate 118 /min (high); "
        "Body temperature 38.4 Cel (high).",
    ]
    # The last set is the condition at discharge, said there only.
    assert [s.text for s in summary.section("condition_at_discharge").sentences] == [
        "Vital signs at discharge (2024-03-05): Heart rate 76 /min.",
        "Not taken again after the admission's set: Body temperature.",
    ]


def test_a_stay_with_one_set_of_vital_signs_shows_it_once() -> None:
    state = evidence_from_fhir(
        fx.stay(vital("hr", "Heart rate", 80, "/min", "8867-4", "2024-03-05T09:00:00+00:00")),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    cited = [c for s in summary.sentences() for c in s.citations if "vital" in s.text.lower()]
    assert len(cited) == len(set(cited)) == 1


def test_the_only_set_taken_at_admission_is_never_the_condition_at_discharge() -> None:
    """A one-day stay whose only vital signs were taken on arrival: a pain score of 7 then is
    not how the patient left; the same set taken near discharge is."""

    def condition_at_discharge(taken: str) -> str:
        record = fx.bundle(
            fx.patient(),
            fx.encounter(start="2024-03-04T13:00:00+00:00"),
            vital("p", "Pain severity", 7, "{score}", "72514-3", taken),
        )
        summary = summarize_evidence(
            evidence_from_fhir(record, settings=PipelineSettings()),
            salience=lambda text: ([], []),
            settings=PipelineSettings(),
        )
        (line,) = [s.text for s in summary.section("condition_at_discharge").sentences]
        return line

    assert condition_at_discharge("2024-03-04T13:10:00+00:00").startswith(
        "No vital signs recorded after admission; at admission (2024-03-04): Pain severity 7"
    )
    assert condition_at_discharge("2024-03-05T10:00:00+00:00").startswith(
        "Vital signs at discharge (2024-03-05): Pain severity 7"
    )


def test_vital_signs_older_than_the_stays_last_day_are_the_latest_not_at_discharge() -> None:
    # The stay ends 2024-03-05 12:00; the last vital signs were taken four days before.
    state = evidence_from_fhir(
        fx.stay(
            vital("hr1", "Heart rate", 88, "/min", "8867-4", "2024-03-01T10:30:00+00:00"),
            vital("hr2", "Heart rate", 76, "/min", "8867-4", "2024-03-01T18:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert [s.text for s in summary.section("results").sentences] == [
        "Vital signs at admission (2024-03-01): Heart rate 88 /min.",
    ]
    assert [s.text for s in summary.section("condition_at_discharge").sentences] == [
        "Latest vital signs (2024-03-01, more than a day before discharge): Heart rate 76 /min."
    ]


def test_a_discharge_set_of_the_evening_before_says_it_was_the_day_before() -> None:
    """The stay ends 2024-03-05 12:00; the last set, 2024-03-04 at 20:00, is within its last day
    but dated the day before: "at discharge (2024-03-04)" beside a discharge on the 5th read as
    a contradiction, so the line says it was the day before; a set of the 5th is plainly at
    discharge."""

    def condition(*resources: dict) -> list[str]:
        state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
        summary = summarize_evidence(
            state, salience=lambda t: ([], []), settings=PipelineSettings()
        )
        return [s.text for s in summary.section("condition_at_discharge").sentences]

    admission = vital("hr1", "Heart rate", 88, "/min", "8867-4", "2024-03-01T10:30:00+00:00")
    evening = vital("hr2", "Heart rate", 76, "/min", "8867-4", "2024-03-04T20:00:00+00:00")
    assert condition(admission, evening) == [
        "Vital signs at discharge (the last set, taken the day before discharge, 2024-03-04): "
        "Heart rate 76 /min."
    ]
    morning = vital("hr3", "Heart rate", 72, "/min", "8867-4", "2024-03-05T08:00:00+00:00")
    assert condition(admission, evening, morning) == [
        "Vital signs at discharge (2024-03-05): Heart rate 72 /min."
    ]


def test_vital_signs_out_of_range_between_admission_and_discharge_are_shown_at_their_worst() -> (
    None
):
    """Neither the admission set nor the discharge set holds the stay's low saturation."""
    saturation = ("Oxygen saturation in Arterial blood", "%", "2708-6")
    state = evidence_from_fhir(
        fx.stay(
            vital("s1", *saturation[:1], 97, *saturation[1:], "2024-03-01T10:30:00+00:00"),
            vital("s2", *saturation[:1], 88, *saturation[1:], "2024-03-02T08:00:00+00:00"),
            vital("s3", *saturation[:1], 85, *saturation[1:], "2024-03-03T08:00:00+00:00"),
            vital("h2", "Heart rate", 80, "/min", "8867-4", "2024-03-03T08:00:00+00:00"),
            vital("s4", *saturation[:1], 95, *saturation[1:], "2024-03-05T09:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = summary.section("results").sentences
    assert [s.text for s in lines][1:] == [
        "Vital signs out of range during the stay (the most extreme of each): Oxygen saturation "
        "in Arterial blood 85 % (critical low) on 2024-03-03."
    ]
    assert lines[1].verdict == "supported", lines[1].review_reasons()


def test_a_laboratory_value_filed_as_a_vital_sign_is_a_result() -> None:
    """Synthea files some NT-proBNP values under vital-signs: never "a vital sign at discharge"."""
    lines = results_of(
        vital("bnp", "NT-proBNP", 2400, "pg/mL", "33762-6", "2024-03-05T08:00:00+00:00"),
    )
    assert lines == ["NT-proBNP (H): 2400 pg/mL on 2024-03-05; reference up to 125."] or lines[
        0
    ].startswith("NT-proBNP (H): 2400 pg/mL on 2024-03-05")
    assert not any(line.startswith("Vital signs") for line in lines)


def test_vital_signs_taken_before_this_admission_are_never_called_the_admissions() -> None:
    """A set two days before the stay (a joined episode's telemedicine call) is said to be from
    before this admission; the admission's own set follows it, and a reading that line states
    is not said again among those out of range."""
    saturation = ("Oxygen saturation in Arterial blood", "%", "2708-6")
    earlier = fx.encounter("vr", start="2024-02-28T09:00:00+00:00", end=None, class_code="VR")
    state = evidence_from_fhir(
        fx.stay(
            earlier,
            vital("b1", "Systolic blood pressure", 77, "mm[Hg]", "8480-6", "2024-02-28T09:10:00Z")
            | {"encounter": {"reference": "Encounter/vr"}},
            vital("s1", *saturation[:1], 88, *saturation[1:], "2024-03-01T10:30:00+00:00"),
            vital("s2", *saturation[:1], 88, *saturation[1:], "2024-03-01T11:30:00+00:00"),
            vital("s3", *saturation[:1], 95, *saturation[1:], "2024-03-05T09:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s.text for s in summary.section("results").sentences]
    assert lines[-2:] == [
        "Vital signs before this admission, earlier in the episode (2024-02-28): Systolic blood "
        "pressure 77 mm[Hg] (low).",
        "Vital signs at admission (2024-03-01): Oxygen saturation in Arterial blood 88 % (low).",
    ]
