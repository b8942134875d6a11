"""Drugs a laboratory value or the blood pressure decides, on hand-built records: potassium-
raising drugs at a high potassium or with no recent renal check, insulin and secretagogues at a
low HbA1c or glucose, blood-pressure-lowering drugs at a low systolic pressure, and an opioid
with a benzodiazepine; each line supported by the checker."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.test_regimen_risks import (
    assert_supported_by_the_checker,
    creatinine,
    going_home,
    risks,
    risks_in,
    stay_evidence,
)


def test_a_potassium_raising_drug_is_flagged_at_a_high_potassium_only() -> None:
    """ACE inhibitors, ARBs and potassium-sparing diuretics are reviewed when the stay's latest
    potassium is above 5.0 mmol/L (ACC/AHA/HFSA 2022, KDIGO 2024); the flag names the value."""

    def record(potassium: float) -> dict:
        return fx.stay(
            going_home("l", "lisinopril 10 MG Oral Tablet"),
            going_home("s", "spironolactone 25 MG Oral Tablet"),
            going_home("a", "amlodipine 5 MG Oral Tablet"),
            fx.observation(
                "k0", "Potassium", 4.2, "mmol/L", loinc="2823-3", when="2024-03-02T08:00:00+00:00"
            ),
            fx.observation(
                "k1", "Potassium", potassium, "mmol/L", loinc="2823-3",
                when="2024-03-04T08:00:00+00:00",
            ),
            creatinine(),
        )  # fmt: skip

    assert risks_in(record(5.4)) == [
        "Potassium 5.4 mmol/L on 2024-03-04 is above the level at which drugs that raise "
        "potassium are reviewed: review lisinopril 10 MG Oral Tablet; spironolactone 25 MG Oral "
        "Tablet"
    ]
    assert risks_in(record(4.8)) == []


def test_insulin_or_a_secretagogue_is_flagged_at_a_low_hba1c_or_a_low_glucose() -> None:
    """A glucose below 70 mg/dL in the stay, or an HbA1c below 6.5 % in the six months before
    discharge (ADA Standards of Care 2024), with a drug that can cause hypoglycaemia."""

    def record(
        *results: dict, drug: str = "insulin glargine 100 UNT/ML Injectable Solution"
    ) -> dict:
        return fx.stay(
            going_home("i", drug), going_home("m", "metformin 500 MG Oral Tablet"), *results
        )

    low_hba1c = fx.observation(
        "h", "Hemoglobin A1c", 5.9, "%", loinc="4548-4", when="2024-01-20T08:00:00+00:00"
    )
    low_glucose = fx.observation(
        "g", "Glucose", 62, "mg/dL", loinc="2345-7", when="2024-03-03T06:00:00+00:00"
    )
    assert risks_in(record(low_hba1c)) == [
        "insulin glargine 100 UNT/ML Injectable Solution at discharge with HbA1c 5.9 % on "
        "2024-01-20, below the level at which such drugs are reduced: a risk of hypoglycaemia; "
        "review the dose"
    ]
    both = risks_in(record(low_hba1c, low_glucose, drug="glipizide 5 MG Oral Tablet"))
    # A sulfonylurea at 73 is a Beers line of its own (test_inappropriate_drugs).
    assert [reason for reason in both if not reason.startswith("Potentially")] == [
        "glipizide 5 MG Oral Tablet at discharge with HbA1c 5.9 % on 2024-01-20, below the level "
        "at which such drugs are reduced and glucose 62 mg/dL on 2024-03-03 in the stay: a risk "
        "of hypoglycaemia; review the dose"
    ]
    normal = fx.observation(
        "h", "Hemoglobin A1c", 7.4, "%", loinc="4548-4", when="2024-01-20T08:00:00+00:00"
    )
    assert risks_in(record(normal)) == []
    metformin_only = fx.stay(
        going_home("m", "metformin 500 MG Oral Tablet"), low_hba1c, low_glucose
    )
    assert risks_in(metformin_only) == []


def test_the_laboratory_risk_lines_are_supported_by_the_checker() -> None:
    """They state only the record's numbers (the value and its date), never the table's limit."""
    assert_supported_by_the_checker(
        ("Potassium", "insulin", "Systolic"),
        going_home("l", "lisinopril 10 MG Oral Tablet"),
        going_home("i", "insulin glargine 100 UNT/ML Injectable Solution"),
        fx.observation(
            "k", "Potassium", 5.4, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
        ),
        fx.observation(
            "g", "Glucose", 62, "mg/dL", loinc="2345-7", when="2024-03-03T06:00:00+00:00"
        ),
        fx.observation(
            "bp", "Systolic blood pressure", 84, "mm[Hg]", loinc="8480-6",
            when="2024-03-04T06:00:00+00:00", category="vital-signs",
        ),
    )  # fmt: skip


def test_drugs_that_lower_blood_pressure_are_flagged_at_a_low_systolic_pressure() -> None:
    """The latest systolic pressure of the stay or of the 30 days before discharge, below
    90 mmHg (ACC/AHA/HFSA 2022, ESC 2021), with drugs that lower blood pressure going home; one
    taken before the stay counts (it may be the last the record holds)."""

    def record(systolic: float, when: str = "2024-02-27T10:00:00+00:00") -> dict:
        return fx.stay(
            going_home("c", "carvedilol 25 MG Oral Tablet"),
            going_home("f", "Furosemide 40 MG Oral Tablet"),
            going_home("s", "simvastatin 20 MG Oral Tablet"),
            fx.observation(
                "bp", "Systolic blood pressure", systolic, "mm[Hg]", loinc="8480-6", when=when,
                category="vital-signs",
            ),
        )  # fmt: skip

    assert risks_in(record(77)) == [
        "Systolic blood pressure 77 mm[Hg] on 2024-02-27 is below the level at which drugs that "
        "lower blood pressure are reviewed: review carvedilol 25 MG Oral Tablet; Furosemide 40 "
        "MG Oral Tablet"
    ]
    assert risks_in(record(118)) == []
    long_ago = record(77, when="2023-06-01T10:00:00+00:00")
    assert risks_in(long_ago) == []


def test_the_flag_gives_the_recorded_value_and_the_windows_other_readings_beyond_the_level() -> (
    None
):
    """5.05 mmol/L, not the 5.1 a key result shows at the analyte's precision (beside the 5.0
    the flag compares it with, the rounding overstated it); a second reading beyond the level
    that day, and a low pressure on three days, are said, each cited; the same sample under a
    second code (a potassium of blood taken with the serum's) is no second reading."""

    def potassium(result_id: str, value: float, when: str, loinc: str = "2823-3") -> dict:
        return fx.observation(result_id, "Potassium", value, "mmol/L", loinc=loinc, when=when)

    def systolic(result_id: str, value: float, when: str) -> dict:
        return fx.observation(
            result_id, "Systolic blood pressure", value, "mm[Hg]", loinc="8480-6", when=when,
            category="vital-signs",
        )  # fmt: skip

    resources = (
        going_home("l", "lisinopril 10 MG Oral Tablet"),
        potassium("k1", 5.05, "2024-03-04T08:20:00+00:00"),
        potassium("k2", 5.05, "2024-03-04T20:25:00+00:00"),
        potassium("k2-blood", 5.05, "2024-03-04T20:25:00+00:00", loinc="6298-4"),
        systolic("bp1", 77, "2024-03-02T10:00:00+00:00"),
        systolic("bp2", 95, "2024-03-03T10:00:00+00:00"),
        systolic("bp3", 78, "2024-03-04T10:00:00+00:00"),
        creatinine(),
    )
    state = stay_evidence(*resources)
    flags = {flag.reason.split(" ")[0]: flag for flag in state.flags_for_review}
    assert flags["Potassium"].reason.startswith(
        "Potassium 5.05 mmol/L on 2024-03-04 (also 5.05 earlier that day) is above the level"
    )
    assert flags["Systolic"].reason.startswith(
        "Systolic blood pressure 78 mm[Hg] on 2024-03-04 (also 77 on 2024-03-02) is below the level"
    )
    cited = {ref.resource for i in flags["Systolic"].fact_ids for ref in state.fact(i).sources}
    assert {"Observation/bp1", "Observation/bp3"} <= cited and "Observation/bp2" not in cited
    assert_supported_by_the_checker(("Potassium", "Systolic"), *resources)


def test_an_opioid_with_a_benzodiazepine_is_flagged() -> None:
    state = stay_evidence(
        going_home("o", "oxycodone hydrochloride 5 MG Oral Tablet"),
        going_home("l", "lorazepam 1 MG Oral Tablet"),
    )
    assert (
        "An opioid with a benzodiazepine: oxycodone hydrochloride 5 MG Oral Tablet; lorazepam 1 MG "
        "Oral Tablet: a risk of respiratory depression; confirm both are needed"
    ) in risks(state)


def test_a_potassium_of_the_week_before_a_stay_that_measured_none_is_the_current_one() -> None:
    """No potassium in the stay; one of 5.4 mmol/L five days before admission (another
    encounter's) still decides; one of a month before does not."""

    def record(when: str) -> dict:
        before = fx.observation("k", "Potassium", 5.4, "mmol/L", loinc="2823-3", when=when) | {
            "encounter": {"reference": "Encounter/clinic"},
            "referenceRange": [],
        }
        renal = creatinine(when) | {"encounter": {"reference": "Encounter/clinic"}}
        return fx.stay(going_home("l", "lisinopril 10 MG Oral Tablet"), before, renal)

    week = evidence_from_fhir(record("2024-02-25T08:00:00+00:00"), settings=PipelineSettings())
    assert risks(week) == [
        "Potassium 5.4 mmol/L on 2024-02-25 is above the level at which drugs that raise "
        "potassium are reviewed: review lisinopril 10 MG Oral Tablet"
    ]
    # A month before is no current value, nor a recent one for the drug started now.
    month = evidence_from_fhir(record("2024-01-25T08:00:00+00:00"), settings=PipelineSettings())
    assert risks(month) == [
        "lisinopril 10 MG Oral Tablet started in this stay, with no recent renal function and no "
        "recent electrolytes on record: check renal function and electrolytes within one to two "
        "weeks of the start"
    ]


def test_a_value_in_range_that_a_safety_rule_cites_is_never_listed_as_normal() -> None:
    """A potassium of 5.05 mmol/L is within 3.5 to 5.1 and above the 5.0 at which lisinopril is
    reviewed: Key results give it a line of its own, never the normal list its flag contradicts."""
    potassium = fx.observation(
        "k", "Potassium", 5.05, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
    ) | {"referenceRange": [{"low": {"value": 3.5}, "high": {"value": 5.1}}]}
    sodium = fx.observation(
        "na", "Sodium", 140, "mmol/L", loinc="2951-2", when="2024-03-04T08:00:00+00:00"
    ) | {"referenceRange": [{"low": {"value": 135}, "high": {"value": 145}}]}
    state = stay_evidence(
        going_home("l", "lisinopril 10 MG Oral Tablet"), potassium, sodium, creatinine()
    )
    assert len(risks(state)) == 1
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s.text for s in summary.section("results").sentences]
    (normal,) = [line for line in lines if line.startswith("Other results within")]
    assert "Sodium" in normal and "Potassium" not in normal
    assert "Potassium: 5.1 mmol/L on 2024-03-04 (reference 3.5 to 5.1)." in lines


def test_a_potassium_raising_drug_started_with_no_recent_renal_function_asks_for_a_check() -> None:
    """ACC/AHA/HFSA 2022 and KDIGO 2021: renal function and potassium are checked within one to
    two weeks of starting an ACE inhibitor, an ARB or a potassium-sparing diuretic. Started in
    the stay with neither measured, the draft asks for both, as it asks for an INR with
    warfarin; with one measured, it names the other; a drug continued from home asks nothing.
    The line is supported by the checker."""
    started = going_home("l", "lisinopril 10 MG Oral Tablet")
    assert risks(stay_evidence(started)) == [
        "lisinopril 10 MG Oral Tablet started in this stay, with no recent renal function and no "
        "recent electrolytes on record: check renal function and electrolytes within one to two "
        "weeks of the start"
    ]
    assert_supported_by_the_checker(("lisinopril 10 MG Oral Tablet started",), started)
    potassium = fx.observation(
        "k", "Potassium", 4.2, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
    )
    (one_missing,) = risks(stay_evidence(started, potassium))
    assert "with no recent renal function on record" in one_missing
    assert risks(stay_evidence(started, potassium, creatinine())) == []
    home = fx.medication_statement("h", "lisinopril 10 MG Oral Tablet")
    assert risks(stay_evidence(home, started)) == []
