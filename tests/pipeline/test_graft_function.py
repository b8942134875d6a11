"""After a transplant, Key results says whether the stay measured the graft's function
(hand-written FHIR: a kidney transplant with and without a creatinine, a baseline creatinine
only, an implied transplant, and an organ no laboratory result measures)."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

KIDNEY = fx.procedure("graft", "Transplantation of kidney", when="2024-03-01T12:00:00+00:00")
CREATININE = fx.observation("creatinine", "Creatinine", 1.4, "mg/dL", loinc="38483-4")
POTASSIUM = fx.observation("potassium", "Potassium", 4.1, "mmol/L", loinc="6298-4")


def key_results(*resources: dict[str, Any]) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    return [s.text for s in summary.section("results").sentences]


def test_a_kidney_transplant_with_no_result_in_the_stay_says_its_function_is_not_documented() -> (
    None
):
    """KDIGO 2009 (13.1.1) measures a new kidney's creatinine daily until discharge; a draft
    with none read as one whose graft was known to work."""
    assert key_results(KIDNEY)[0] == (
        "No laboratory result in this stay, after the Transplantation of kidney: the graft's "
        "function (creatinine or eGFR) at discharge is not documented."
    )


def test_a_creatinine_of_the_stay_answers_it() -> None:
    assert not [line for line in key_results(KIDNEY, CREATININE) if "graft" in line]


def test_a_creatinine_before_admission_does_not() -> None:
    """The baseline says how the kidneys were before; the graft is the stay's."""
    before = CREATININE | {"id": "old", "effectiveDateTime": "2024-02-20T08:00:00+00:00"}
    before = before | {"encounter": None}
    assert key_results(KIDNEY, before, POTASSIUM)[0] == (
        "No creatinine or eGFR result in this stay, after the Transplantation of kidney: the "
        "graft's function at discharge is not documented."
    )


def test_a_transplant_the_record_only_implies_is_read_the_same() -> None:
    history = fx.condition("history", "History of renal transplant", code="161665007")
    assert key_results(history)[0].startswith(
        "No laboratory result in this stay, after the renal transplant:"
    )


def test_an_organ_no_laboratory_result_measures_asks_nothing() -> None:
    """A heart graft is judged by echocardiography and biopsy, not a result this rule reads."""
    heart = fx.procedure("heart", "Transplantation of heart", when="2024-03-01T12:00:00+00:00")
    assert not [line for line in key_results(heart) if "graft" in line]
