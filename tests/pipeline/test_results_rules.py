"""Results that show what matters: ranges, flags, precision, trends, vital signs."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.clinical.results import shown
from pipeline.evidence.model import LabResultAttributes
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import synthea_bundles
from tests.pipeline.conftest import default_draft
from tests.pipeline.results_support import (
    CO2,
    CREATININE,
    POTASSIUM,
    SODIUM,
    lab,
    results_of,
    review_lines,
)


def test_values_are_shown_at_clinical_precision() -> None:
    assert shown(Decimal("4.6483"), 2) == "4.65"
    assert shown(Decimal("4.6483")) == "4.648"  # four significant digits at most
    assert shown(Decimal("136.72")) == "136.7"
    assert shown(Decimal("12345.6")) == "12346"
    assert shown(Decimal("0.000123456")) == "0.0001235"


def test_abnormal_results_come_first_marked_with_their_trend_and_baseline() -> None:
    lines = results_of(
        lab("base", "Creatinine", 1.1, "mg/dL", CREATININE, "2023-11-01T08:00:00+00:00")
        | {"encounter": {"reference": "Encounter/old"}},
        fx.encounter("old", "2023-11-01T07:00:00+00:00", "2023-11-01T09:00:00+00:00", "AMB"),
        lab("na", "Sodium", 140, "mmol/L", SODIUM, "2024-03-02T08:00:00+00:00"),
        lab("cr1", "Creatinine", 2.63, "mg/dL", CREATININE, "2024-03-02T08:00:00+00:00"),
        lab("cr2", "Creatinine", 4.6483, "mg/dL", CREATININE, "2024-03-04T08:00:00+00:00"),
    )
    assert lines == [
        "Creatinine (H): 2.63 → 4.65 mg/dL (2024-03-02 to 2024-03-04); reference 0.6 to 1.1; "
        "before admission 1.10 mg/dL on 2023-11-01.",
        "Other results within their reference ranges: Sodium.",
    ]


def test_a_critical_value_is_marked_and_flagged_for_review() -> None:
    state = evidence_from_fhir(
        fx.stay(lab("k", "Potassium", 6.9, "mmol/L", POTASSIUM, "2024-03-02T08:00:00+00:00")),
        settings=PipelineSettings(),
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "critical_result"]
    assert flag.reason == "Critical result: Potassium 6.9 mmol/L on 2024-03-02"
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s.text for s in summary.section("results").sentences]
    assert line.startswith("Potassium (critical high): 6.9 mmol/L")
    assert any(
        s.text.startswith("Critical result") for s in summary.section("needs_review").sentences
    )


def test_the_observations_own_range_wins_and_another_unit_gets_no_default() -> None:
    own = lab("own", "Sodium", 150, "mmol/L", SODIUM, "2024-03-02T08:00:00+00:00") | {
        "referenceRange": [{"low": {"value": 130}, "high": {"value": 155}}]
    }
    other_unit = lab("unit", "Creatinine", 300, "umol/L", CREATININE, "2024-03-02T08:00:00+00:00")
    state = evidence_from_fhir(fx.stay(own, other_unit), settings=PipelineSettings())
    by_name = {f.attributes.name: f.attributes for f in state.facts["lab_result"]}
    assert (by_name["Sodium"].flag, by_name["Sodium"].range_source) == ("normal", "observation")
    assert by_name["Creatinine"].flag is None and by_name["Creatinine"].range_source is None


HEMOGLOBIN = "718-7"


@pytest.mark.parametrize(
    ("gender", "line"),
    [
        ("female", "Hemoglobin (H): 16.1 g/dL on 2024-03-02; reference 12.1 to 15.1."),
        ("male", "Other results within their reference ranges: Hemoglobin."),
        (None, "Other results within their reference ranges: Hemoglobin."),
    ],
)
def test_a_default_range_is_the_patients_sexs_where_adult_ranges_differ(
    gender: str | None, line: str
) -> None:
    """A haemoglobin of 16.1 g/dL is high in a woman (MedlinePlus: 12.1 to 15.1 g/dL) and
    normal in a man (13.8 to 17.2); a reader found it among a woman's normal results. A record
    that gives no sex gets the range for both."""
    patient = fx.patient() | {"gender": gender}
    record = fx.bundle(
        patient if gender else {k: v for k, v in patient.items() if k != "gender"},
        fx.encounter(),
        lab("hb", "Hemoglobin", 16.1, "g/dL", HEMOGLOBIN, "2024-03-02T08:00:00+00:00"),
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    assert [s.text for s in summary.section("results").sentences] == [line]


def test_an_abnormal_value_is_never_rounded_back_into_its_range() -> None:
    (line,) = results_of(
        lab("c", "Carbon dioxide", 21.61, "mmol/L", CO2, "2024-03-02T08:00:00+00:00")
    )
    assert line.startswith("Carbon dioxide (L): 21.6 mmol/L")


@pytest.mark.parametrize(
    ("name", "loinc", "value", "unit", "mark"),
    [
        ("eGFR", "33914-3", 13, "mL/min", "critical low"),  # Synthea's spelling of the unit
        ("eGFR", "33914-3", 12, "mL/min/{1.73_m2}", "critical low"),
        ("pH", "2744-1", 7.235, "[pH]", "L"),
        ("pH", "2744-1", 7.18, "[pH]", "critical low"),
        ("pCO2", "2019-8", 72, "mm[Hg]", "critical high"),
        ("Bicarbonate", "1963-8", 8, "mmol/L", "critical low"),
        ("Lactate", "2524-7", 4.8, "mmol/L", "critical high"),
        ("Bilirubin", "1975-2", 13.7, "mg/dL", "H"),
        ("Troponin I", "89579-7", 140, "ng/L", "critical high"),
        ("BNP", "30934-4", 850, "pg/mL", "H"),
    ],
)
def test_the_shipped_ranges_mark_blood_gases_kidney_function_and_cardiac_markers(
    name: str, loinc: str, value: float, unit: str, mark: str
) -> None:
    (line,) = results_of(lab("x", name, value, unit, loinc, "2024-03-04T08:00:00+00:00"))
    assert line.startswith(f"{name} ({mark}): ")
    critical = [
        line
        for line in review_lines(lab("x", name, value, unit, loinc, "2024-03-04T08:00:00+00:00"))
        if line.startswith("Critical result")
    ]
    assert bool(critical) == mark.startswith("critical")


def test_a_critical_value_that_recurs_is_one_flag_with_its_first_and_last() -> None:
    days = ["2024-03-01T08:00:00+00:00", "2024-03-02T08:00:00+00:00", "2024-03-03T08:00:00+00:00"]
    state = evidence_from_fhir(
        fx.stay(
            *(
                lab(f"k{i}", "Potassium", 6.9 + i / 10, "mmol/L", POTASSIUM, d)
                for i, d in enumerate(days)
            )
        ),
        settings=PipelineSettings(),
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "critical_result"]
    assert flag.reason == (
        "Critical result: Potassium: first 6.9 mmol/L on 2024-03-01, last 7.1 mmol/L on 2024-03-03"
    )
    assert len(flag.fact_ids) == 3


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_every_out_of_range_synthea_result_is_marked(path: Path) -> None:
    state, summary = default_draft(path)
    # The last vital signs are the condition at discharge's (each fact is cited once).
    sentences = [
        *summary.section("results").sentences,
        *summary.section("condition_at_discharge").sentences,
    ]
    normal_line = [s for s in sentences if s.text.startswith("Other results within")]
    for fact in state.facts["lab_result"]:
        result = fact.attributes
        assert isinstance(result, LabResultAttributes)
        if result.baseline or result.value is None:
            continue
        outside = (result.reference_low is not None and result.value < result.reference_low) or (
            result.reference_high is not None and result.value > result.reference_high
        )
        if outside:
            assert result.flag in {"high", "low", "critical high", "critical low"}
            marked = [s for s in sentences if fact.id in s.citations]
            assert marked and not any(s in normal_line for s in marked), result.name
        if result.shown_value is not None:
            digits = result.shown_value.replace(".", "").lstrip("0")
            assert len(digits) <= 4 or "." not in result.shown_value, result.shown_value
    assert all(s.verdict == "supported" for s in sentences), [
        (s.text, s.review_reasons()) for s in sentences if s.verdict != "supported"
    ]


def test_a_result_out_of_range_the_week_before_a_stay_that_never_measured_it_is_shown() -> None:
    """Creatinine 2.06 mg/dL three days before admission, none in the stay: still the current
    value, shown with its date; a normal one is not listed."""
    high = lab("c", "Creatinine", 2.06, "mg/dL", CREATININE, "2024-02-27T08:00:00+00:00")
    normal = lab("n", "Sodium", 140, "mmol/L", SODIUM, "2024-02-27T08:00:00+00:00")
    for observation in (high, normal):
        observation["encounter"] = {"reference": "Encounter/clinic"}
    lines = results_of(high, normal)
    assert [line for line in lines if "before admission" in line] == [
        "Out of range in the days before admission, not measured in this stay: Creatinine 2.06 "
        "mg/dL (high) on 2024-02-27, reference 0.6 to 1.1."
    ]


@pytest.mark.parametrize(
    ("loinc", "name"),
    [
        ("10230-1", "Left ventricular Ejection fraction"),
        ("18043-0", "Left ventricular Ejection fraction by US"),
        ("99999-9", "LV ejection fraction (echo report)"),
    ],
)
def test_the_last_ejection_fraction_of_any_date_is_shown_when_the_stay_has_none(
    loinc: str, name: str
) -> None:
    """An ejection fraction of seven months before classifies the heart failure a stay treats:
    it stays current whatever its age, and only the latest is shown; a sodium of seven weeks
    before is not."""
    older = lab("ef0", name, 42.56, "%", loinc, "2023-08-29T08:00:00+00:00")
    latest = lab("ef1", name, 45.57, "%", loinc, "2024-02-25T08:00:00+00:00")
    sodium = lab("na", "Sodium", 150, "mmol/L", SODIUM, "2024-01-10T08:00:00+00:00")
    for observation in (older, latest, sodium):
        observation["encounter"] = {"reference": "Encounter/clinic"}
    lines = results_of(older, latest, sodium)
    assert [line for line in lines if "before" in line] == [
        f"Last measured before this stay, not measured in it: {name} 45.57 % on 2024-02-25."
    ]


def test_an_ejection_fraction_measured_in_the_stay_is_its_own_result() -> None:
    """Measured in the stay, the stay's value is the result and the old one no line of its own."""
    before = lab(
        "ef0", "Left ventricular Ejection fraction", 45, "%", "10230-1", "2023-08-29T08:00:00+00:00"
    )
    before["encounter"] = {"reference": "Encounter/clinic"}
    during = lab(
        "ef1", "Left ventricular Ejection fraction", 35, "%", "10230-1", "2024-03-02T08:00:00+00:00"
    )
    lines = results_of(before, during)
    assert not any(line.startswith("Last measured before this stay") for line in lines)
    assert any("Left ventricular Ejection fraction" in line and "35 %" in line for line in lines)


def test_a_test_with_no_range_measured_twice_is_one_line() -> None:
    """Two globulins of one morning, no range on either: one line with both values, each cited."""
    globulin = "10834-0"
    first = lab("g1", "Globulin", 28.43, "g/L", globulin, "2024-03-02T08:00:00+00:00")
    second = lab("g2", "Globulin", 31.2, "g/L", globulin, "2024-03-02T11:00:00+00:00")
    state = evidence_from_fhir(fx.stay(first, second), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("results").sentences if "Globulin" in s.text]
    assert line.text == "Globulin: 28.43 → 31.2 g/L on 2024-03-02."
    assert len(line.citations) == 2 and line.verdict == "supported", line.review_reasons()
