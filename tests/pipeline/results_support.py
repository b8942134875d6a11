"""Hand-built results for the result tests: laboratory values with the shipped default ranges,
vital signs, and the lines a stay's draft makes of them."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

CREATININE, POTASSIUM, SODIUM, CO2 = "2160-0", "6298-4", "2951-2", "2028-9"


def lab(obs_id: str, name: str, value: float, unit: str, loinc: str, when: str, **extra) -> dict:
    observation = fx.observation(obs_id, name, value, unit, loinc=loinc, when=when)
    del observation["referenceRange"]  # the shipped adult default applies
    return observation | extra


def results_of(*resources: dict) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [sentence.text for sentence in summary.section("results").sentences]


def vital(obs_id: str, name: str, value: float, unit: str, loinc: str, when: str) -> dict:
    return lab(
        obs_id, name, value, unit, loinc, when, category=[{"coding": [{"code": "vital-signs"}]}]
    )


def review_lines(*resources: dict) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [sentence.text for sentence in summary.section("needs_review").sentences]
