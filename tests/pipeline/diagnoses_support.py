"""A hand-built stay with a mixed problem list (a principal, the stay's own diagnosis, chronic
problems, social findings, an old acute event) and the sections a draft makes of it."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from tests import fhir_fixtures as fx


def record(*more: dict) -> dict:
    stay = fx.encounter() | {
        "reasonReference": [{"reference": "Condition/valve"}],
    }
    return fx.bundle(
        fx.patient(),
        stay,
        fx.condition(
            "hypertension",
            "Essential hypertension",
            code="59621000",
            encounter_id=None,
            onset="2010-05-01",
        ),
        fx.condition(
            "valve", "Aortic valve stenosis", code="60573004", encounter_id=None, onset="2023-01-10"
        ),
        fx.condition("pneumonia", "Aspiration pneumonia", code="422588002", onset="2024-03-03"),
        fx.condition(
            "education", "Received higher education (finding)", code="224299000", onset="2024-03-01"
        ),
        fx.condition(
            "refugee", "Refugee (person)", code="446654005", encounter_id=None, onset="1990-01-01"
        ),
        fx.condition(
            "sepsis", "Sepsis (disorder)", code="91302008", encounter_id=None, onset="1973-06-01"
        ),
        fx.condition(
            "anemia", "Anemia (disorder)", code="271737000", encounter_id=None, onset="2020-01-01"
        ),
        *more,
    )


def sections(state: EvidenceState) -> dict[str, list[str]]:
    summary = summarize_evidence(state, settings=PipelineSettings())
    return {section.key: [s.text for s in section.sentences] for section in summary.sections}
