"""The kidney function a drug's dose is reviewed against: the record's eGFR, or the one its
latest creatinine gives (CKD-EPI 2021) where that is lower, each said with its source."""

from __future__ import annotations

import pytest

from pipeline.clinical.kidney_function import estimated_gfr
from pipeline.evidence.model import ComputedAttributes, EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

MEASURED = "2024-03-04T08:00:00+00:00"
ALENDRONATE = "alendronic acid 70 MG Oral Tablet"


def creatinine(value: float, unit: str = "mg/dL") -> dict:
    return fx.observation("cr", "Creatinine", value, unit, loinc="2160-0", when=MEASURED)


def egfr(value: float) -> dict:
    return fx.observation("gfr", "eGFR", value, "mL/min", loinc="33914-3", when=MEASURED)


def drafted(*results: dict) -> EvidenceState:
    """A woman of 73 (the fixtures' patient) going home on alendronate, with ``results``."""
    order = fx.medication_request(
        "alendronate",
        ALENDRONATE,
        encounter_id=fx.ENCOUNTER_ID,
        dose="1 tablet",
        frequency=(1, 7, "d"),
        route="oral",
    )
    return evidence_from_fhir(fx.stay(order, *results), settings=PipelineSettings())


def renal_lines(state: EvidenceState) -> list[str]:
    return [f.reason for f in state.flags_for_review if "at this kidney function" in f.reason]


@pytest.mark.parametrize(
    ("creatinine_mg_dl", "age", "female", "expected"),
    [(1.0, 50, False, 92), (1.0, 60, True, 64), (2.06, 65, True, 26), (0.6, 30, True, 124)],
)
def test_the_estimate_is_the_race_free_ckd_epi_2021_equation(
    creatinine_mg_dl: float, age: int, female: bool, expected: int
) -> None:
    """142 × min(Scr/κ, 1)^α × max(Scr/κ, 1)^−1.200 × 0.9938^age (× 1.012 for a woman), with κ
    0.7 and α −0.241 for a woman, κ 0.9 and α −0.302 for a man (Inker et al., NEJM 2021)."""
    assert round(estimated_gfr(creatinine_mg_dl, age, female)) == expected


def test_a_creatinine_whose_estimate_is_below_the_recorded_egfr_decides_the_review() -> None:
    """The record says eGFR 70 beside a creatinine of 2.06 mg/dL: for a woman of 73 that is an
    eGFR of about 25, below the limit at which alendronate is avoided. The line gives both
    values and cites the estimate as a computed fact, so that its every number is checked."""
    state = drafted(creatinine(2.06), egfr(70))
    assert renal_lines(state) == [
        "eGFR about 25 mL/min/1.73 m², computed from creatinine 2.06 mg/dL on 2024-03-04 "
        "(CKD-EPI 2021); the record's eGFR of 2024-03-04 reads 70: "
        f"{ALENDRONATE}, avoided at this kidney function: hold or stop it, or say why it continues"
    ]
    (computed,) = state.facts["computed"]
    assert isinstance(computed.attributes, ComputedAttributes)
    assert computed.attributes.value == 25
    (flag,) = [f for f in state.flags_for_review if f.reason in renal_lines(state)]
    assert computed.id in flag.fact_ids
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("needs_review").sentences if "CKD-EPI" in s.text]
    assert line.verdict == "supported"


def test_the_recorded_egfr_decides_where_it_is_the_lower_or_there_is_no_creatinine() -> None:
    assert renal_lines(drafted(creatinine(0.9), egfr(13))) == [
        f"eGFR 13 mL/min on 2024-03-04: {ALENDRONATE}, avoided at this kidney function: hold or "
        "stop it, or say why it continues"
    ]
    assert renal_lines(drafted(egfr(13))) == renal_lines(drafted(creatinine(0.9), egfr(13)))
    assert renal_lines(drafted(creatinine(0.7), egfr(70))) == []
    assert drafted(creatinine(0.7), egfr(70)).facts["computed"] == []


def test_a_creatinine_alone_is_estimated_in_either_unit() -> None:
    expected = [
        "eGFR about 25 mL/min/1.73 m², computed from creatinine 2.06 mg/dL on 2024-03-04 "
        f"(CKD-EPI 2021): {ALENDRONATE}, avoided at this kidney function: hold or stop it, or say "
        "why it continues"
    ]
    assert renal_lines(drafted(creatinine(2.06))) == expected
    in_micromoles = renal_lines(drafted(creatinine(182, "µmol/L")))
    assert in_micromoles == [expected[0].replace("2.06 mg/dL", "182 µmol/L")]
    assert renal_lines(drafted(creatinine(0.9))) == []
    # A creatinine recorded as zero is an error of the record: no estimate, and no failed draft.
    assert drafted(creatinine(0)).facts["computed"] == []


def test_a_kidney_stage_on_the_problem_list_that_the_current_egfr_contradicts_says_so() -> None:
    """ "Chronic kidney disease stage 2" (KDIGO G2: 60 to 89) beside an eGFR of about 25 from
    the latest creatinine: the problem's line gives the current kidney function, cited, and the
    checker finds every number of it in its evidence. A stage the eGFR fits is said as before."""
    ckd = fx.condition(
        "ckd", "Chronic kidney disease stage 2 (disorder)", encounter_id=None, onset="2018-10-06"
    )
    state = drafted(ckd, creatinine(2.06), egfr(70))
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("active_problems").sentences if "kidney" in s.text]
    assert line.text == (
        "Active at discharge: Chronic kidney disease stage 2, since 2018-10-06; the current "
        "kidney function is outside that stage's range: eGFR about 25 mL/min/1.73 m², computed "
        "from creatinine 2.06 mg/dL on 2024-03-04 (CKD-EPI 2021); the record's eGFR of "
        "2024-03-04 reads 70."
    )
    assert line.verdict == "supported" and len(line.citations) == 4
    fitting = summarize_evidence(drafted(ckd, egfr(70)), settings=PipelineSettings())
    assert [s.text for s in fitting.section("active_problems").sentences if "kidney" in s.text] == [
        "Active at discharge: Chronic kidney disease stage 2, since 2018-10-06."
    ]
