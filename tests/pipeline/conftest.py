"""What the pipeline's tests share: its settings, as the defaults give them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence, Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir

if TYPE_CHECKING:
    from pipeline.backends.claim_judge import JudgeConfig


@pytest.fixture
def settings() -> PipelineSettings:
    return PipelineSettings()


@pytest.fixture
def judge_config() -> JudgeConfig:
    """A small claim judge's configuration, for the tests of the judge and of its cut-offs
    (imported here, not above: the claim judge loads torch)."""
    from pipeline.backends.claim_judge import JudgeConfig

    return JudgeConfig(
        rank=4,
        alpha=8,
        max_length=64,
        unsupported_below=0.1,
        contradicted_above=0.8,
        weak_below=0.4,
    )


def default_draft(path: Path) -> tuple[EvidenceState, Summary]:
    """The evidence of a FHIR bundle file and its evidence-only draft, under the default
    settings: what each test run over every Synthea stay checks."""
    state = evidence_from_fhir(json.loads(path.read_bytes()), settings=PipelineSettings())
    return state, summarize_evidence(state, settings=PipelineSettings())


def needs_review_line(state: EvidenceState, saying: str) -> Sentence:
    """The one Needs review line of ``state``'s draft that says ``saying`` (drafted without
    FOCUS's model): what a rule's test checks the checker's verdict on."""
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("needs_review").sentences if saying in s.text]
    return line
