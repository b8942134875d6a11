"""Drafting a hand-built stay for a test: its evidence state and each section's sentences."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

# An H&P whose home medication list names two drugs.
HP_LISTING_LISINOPRIL = fx.document_reference(
    "hp", fx.attachment("# Medications\nlisinopril 10 mg oral tablet; aspirin 81 mg oral tablet\n")
)


def drafted(*resources: dict) -> tuple[EvidenceState, dict[str, list[str]]]:
    """The stay of ``resources`` drafted by the evidence-only summarizer, sections by key."""
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    return state, {section.key: [s.text for s in section.sentences] for section in summary.sections}
