"""A kidney transplanted in this stay changes the renal function every dose was set for: the
drugs going home that raise potassium or are dosed by renal function are flagged, once, when the
stay measured no renal function or no electrolytes since (KDIGO: creatinine daily until
discharge). A graft of another organ, one transplanted years before, or a stay that measured
both, raises nothing."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}
LISINOPRIL = "lisinopril 20 MG Oral Tablet"


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


def renal_transplant(onset: str = "2024-03-02T09:00:00+00:00") -> dict[str, Any]:
    """ "History of renal transplant" recorded on ``onset`` (by default day two of the stay)."""
    return fx.condition("tx", "History of renal transplant (situation)", onset=onset)


def creatinine() -> dict[str, Any]:
    return fx.observation("cr", "Creatinine", 1.4, "mg/dL", loinc="2160-0", when=fx.DISCHARGE)


def potassium() -> dict[str, Any]:
    return fx.observation("k", "Potassium", 4.4, "mmol/L", loinc="2823-3", when=fx.DISCHARGE)


def graft_flags(*resources: dict[str, Any]) -> list[tuple[str, list[str]]]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    return [
        (flag.reason, flag.fact_ids)
        for flag in state.flags_for_review
        if "kidney transplant" in flag.reason
    ]


def test_a_drug_the_kidney_decides_after_a_graft_no_result_measured_is_flagged_once() -> None:
    lisinopril = going_home("ace", LISINOPRIL)
    state = evidence_from_fhir(
        fx.stay(renal_transplant(), lisinopril, going_home("ccb", "amlodipine 5 MG Oral Tablet")),
        settings=PipelineSettings(),
    )
    (flag,) = [f for f in state.flags_for_review if "kidney transplant" in f.reason]
    assert flag.reason == (
        "lisinopril 20 MG Oral Tablet at discharge after a kidney transplant in this stay "
        "(History of renal transplant), with no renal function and no electrolytes measured "
        "since: the graft's function decides these drugs' doses and safety; check renal "
        "function and electrolytes before they go home"
    )
    assert flag.code == "regimen_risk"
    # The graft and the drug are cited; the drug the kidney does not decide is not named.
    assert len(flag.fact_ids) == 2 and "amlodipine" not in flag.reason
    _the_drug_line_and_needs_review_carry_it(state)


def _the_drug_line_and_needs_review_carry_it(state: EvidenceState) -> None:
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    review = [s for s in summary.section("needs_review").sentences if "kidney" in s.text]
    assert len(review) == 1 and review[0].verdict == "supported"
    (line,) = [s for s in summary.section("medications").sentences if "lisin" in s.text]
    assert "kidney transplant in this stay" in line.review_reasons()


def test_only_what_the_stay_did_not_measure_is_named() -> None:
    ((reason, _),) = graft_flags(renal_transplant(), going_home("ace", LISINOPRIL), creatinine())
    assert "with no electrolytes measured since" in reason
    assert "no renal function" not in reason


def test_a_stay_that_measured_both_raises_nothing() -> None:
    assert (
        graft_flags(renal_transplant(), going_home("ace", LISINOPRIL), creatinine(), potassium())
        == []
    )


def test_a_kidney_transplanted_years_before_the_stay_raises_nothing() -> None:
    earlier = renal_transplant(onset="2015-06-01T09:00:00+00:00") | {"encounter": None}
    assert graft_flags(earlier, going_home("ace", LISINOPRIL)) == []


def test_a_graft_of_another_organ_raises_nothing() -> None:
    liver = fx.condition(
        "tx", "History of liver transplant (situation)", onset="2024-03-02T09:00:00+00:00"
    )
    assert graft_flags(liver, going_home("ace", LISINOPRIL)) == []


def test_a_transplant_procedure_of_the_stay_is_a_graft_too() -> None:
    done = fx.procedure(
        "p", "Transplantation of kidney (procedure)", when="2024-03-02T09:00:00+00:00"
    )
    ((reason, _),) = graft_flags(done, going_home("met", "metformin 500 MG Oral Tablet"))
    assert reason.startswith("metformin 500 MG Oral Tablet at discharge after a kidney transplant")
    assert "(Transplantation of kidney)" in reason
