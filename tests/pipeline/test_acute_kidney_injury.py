"""Acute kidney injury by KDIGO on a stay's creatinine series, against the baseline of the three
months before admission."""

from __future__ import annotations

import pytest

from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.results_support import (
    CREATININE,
    lab,
    review_lines,
)


def kidney_lines(*resources: dict) -> list[Sentence]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [
        s for s in summary.section("needs_review").sentences if s.text.startswith("Acute kidney")
    ]


def test_a_creatinine_rise_of_kdigo_size_is_flagged_as_acute_kidney_injury() -> None:
    (line,) = kidney_lines(
        lab("cr1", "Creatinine", 2.63, "mg/dL", CREATININE, "2024-03-02T08:00:00+00:00"),
        lab("cr2", "Creatinine", 4.65, "mg/dL", CREATININE, "2024-03-02T11:00:00+00:00"),
    )
    assert line.text == (
        "Acute kidney injury by KDIGO creatinine criteria (absolute rise): creatinine 2.63 mg/dL "
        "on 2024-03-02 → 4.65 mg/dL on 2024-03-02: confirm the diagnosis and plan follow-up of "
        "renal function."
    )
    # A flag is a sentence of the draft: it states no number its evidence does not hold.
    assert line.verdict == "supported", line.review_reasons()


def test_a_rise_to_one_and_a_half_times_the_baseline_within_a_week_is_acute_kidney_injury() -> None:
    baseline = lab("base", "Creatinine", 0.8, "mg/dL", CREATININE, "2024-02-27T08:00:00+00:00") | {
        "encounter": {"reference": "Encounter/old"}
    }
    old = fx.encounter("old", "2024-02-27T07:00:00+00:00", "2024-02-27T09:00:00+00:00", "AMB")
    (line,) = kidney_lines(
        baseline,
        old,
        lab("cr", "Creatinine", 1.25, "mg/dL", CREATININE, "2024-03-04T08:00:00+00:00"),
    )
    assert "(relative rise): creatinine 0.80 mg/dL on 2024-02-27 → 1.25 mg/dL on 2024-03-04" in (
        line.text
    )
    assert line.verdict == "supported", line.review_reasons()


@pytest.mark.parametrize(("measured", "flagged"), [("2024-01-05", True), ("2023-10-20", False)])
def test_a_baseline_from_the_three_months_before_admission_counts(
    measured: str, flagged: bool
) -> None:
    """KDIGO's presumed baseline: the latest value of the 90 days before, not only of the week."""
    clinic = fx.encounter("old", f"{measured}T07:00:00+00:00", f"{measured}T09:00:00+00:00", "AMB")
    baseline = lab("base", "Creatinine", 0.96, "mg/dL", CREATININE, f"{measured}T08:00:00+00:00")
    lines = kidney_lines(
        clinic,
        baseline | {"encounter": {"reference": "Encounter/old"}},
        lab("cr", "Creatinine", 2.7, "mg/dL", CREATININE, "2024-03-02T08:00:00+00:00"),
    )
    assert bool(lines) is flagged
    if flagged:
        assert f"creatinine 0.96 mg/dL on {measured} → 2.70 mg/dL on 2024-03-02" in lines[0].text
        assert lines[0].verdict == "supported", lines[0].review_reasons()


@pytest.mark.parametrize(
    ("first", "second", "apart_hours"),
    [
        (1.0, 1.2, 24),  # +0.2 in a day: below both criteria
        (1.0, 1.4, 72),  # +0.4, but over three days, and under 1.5 times
        (1.0, 1.6, 24 * 8),  # 1.6 times, but eight days apart
    ],
)
def test_a_creatinine_change_short_of_kdigo_is_not_flagged(
    first: float, second: float, apart_hours: int
) -> None:
    from datetime import datetime, timedelta

    start = datetime.fromisoformat("2024-03-01T11:00:00+00:00")
    later = (start + timedelta(hours=apart_hours)).isoformat()
    lines = review_lines(
        lab("cr1", "Creatinine", first, "mg/dL", CREATININE, start.isoformat()),
        lab("cr2", "Creatinine", second, "mg/dL", CREATININE, later),
    )
    assert not any(line.startswith("Acute kidney injury") for line in lines)
