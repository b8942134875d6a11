"""Vital signs unstable at the last measurement before discharge (Nguyen et al. 2017): one
Needs review line, on hand-built records."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def vital(obs_id: str, name: str, value: float, unit: str, loinc: str, when: str) -> dict[str, Any]:
    return fx.observation(obs_id, name, value, unit, loinc=loinc, when=when, category="vital-signs")


def saturation(
    obs_id: str, value: float, when: str = "2024-03-04T08:00:00+00:00"
) -> dict[str, Any]:
    return vital(obs_id, "Oxygen saturation in Arterial blood", value, "%", "2708-6", when)


def unstable(*resources: dict[str, Any]) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    return [f.reason for f in state.flags_for_review if f.code == "unstable_at_discharge"]


def test_a_low_last_saturation_is_asked_about_with_its_value_and_date() -> None:
    assert unstable(saturation("s", 88)) == [
        "Unstable at the last measurement before discharge: Oxygen saturation in Arterial blood "
        "88 % on 2024-03-04: confirm the patient is stable to leave, or what is done about it"
    ]


def test_only_the_last_measurement_counts() -> None:
    """A low saturation on admission followed by a normal one is a patient who improved."""
    later = saturation("s2", 95, when="2024-03-05T08:00:00+00:00")
    assert unstable(saturation("s1", 88), later) == []
    assert unstable(saturation("s1", 95), saturation("s2", 89, "2024-03-05T08:00:00+00:00"))


def test_a_reading_before_the_stay_is_not_its_last() -> None:
    assert unstable(saturation("s", 85, when="2024-02-20T08:00:00+00:00")) == []


def test_every_unstable_sign_is_one_line_and_a_pressure_of_90_is_unstable() -> None:
    when = "2024-03-04T08:00:00+00:00"
    (line,) = unstable(
        vital("hr", "Heart rate", 112, "/min", "8867-4", when),
        vital("t", "Body temperature", 38.2, "Cel", "8310-5", when),
        vital("bp", "Systolic blood pressure", 90, "mm[Hg]", "8480-6", when),
        vital("rr", "Respiratory rate", 18, "/min", "9279-1", when),
    )
    assert "Body temperature 38.2 Cel" in line and "Heart rate 112 /min" in line
    assert "Systolic blood pressure 90 mm[Hg]" in line and "Respiratory rate" not in line


def test_the_line_is_supported_by_the_checker() -> None:
    state = evidence_from_fhir(fx.stay(saturation("s", 88)), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("needs_review").sentences if "Unstable" in s.text]
    assert line.verdict == "supported" and [f.code for f in line.flags] == ["unstable_at_discharge"]
