"""The summarizer a deployment configures, built once per process from the settings.

``evidence-only`` (the default) drafts from the evidence alone; ``smollm2`` runs the packaged
SmolLM2-135M-Instruct (``smartapp.core.packaged_model``) in the worker: real language to
exercise the pipeline offline, not clinical quality; ``openai:URL#MODEL`` asks an
OpenAI-compatible server (vLLM, TGI, llama.cpp server, Ollama, a gateway); ``transformers:DIR``
runs a local Hugging Face causal LM in the worker (a ``.gguf`` file is converted once). A local
causal LM directory named by ``aura_scorer`` scores grounding (AURA) for a remote model; a local
model scores its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.backends.chat import ChatBackend, Progress, no_progress
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.agentic import GroundingScorer, LoopSettings, draft_with_model
from smartapp.core.openai_backend import OpenAIBackend
from smartapp.core.packaged_model import (
    SMOLLM2,
    SMOLLM2_NAME,
    SMOLLM2_TAU,
    converted_directory,
    packaged_smollm2,
)
from smartapp.core.setting_groups import SUMMARIZER_PATTERN
from smartapp.core.settings import Settings

if TYPE_CHECKING:
    from pipeline.checking.entailment import Judge
    from pipeline.checking.model_judge import ModelJudge

EVIDENCE_ONLY = "evidence-only"
SUMMARIZER_SPEC = re.compile(SUMMARIZER_PATTERN)


@dataclass(frozen=True, slots=True)
class LanguageModel:
    """The model that drafts, and what scores its sentences' grounding (if anything)."""

    backend: ChatBackend
    grounding: GroundingScorer | None
    # AURA's threshold calibrated for this model (bench/aura_calibration.py), where known.
    tau: float | None = None
    # Whether its entailment judgement is asked beside the trained verifier's by default.
    judges: bool = False

    def draft(
        self, state: EvidenceState, settings: PipelineSettings, progress: Progress = no_progress
    ) -> tuple[EvidenceState, Summary]:
        """This model's draft of the stay under the deployment's settings, with the model's own
        τ unless the deployment sets one: the one way the app, the CLI and the bench draft."""
        return draft_with_model(
            state,
            self.backend,
            settings=LoopSettings.from_settings(settings, self.tau, self.judges),
            max_agent_steps=settings.max_agent_steps,
            grounding=self.grounding,
            progress=progress,
        )


def language_model(settings: Settings, spec: str | None = None) -> LanguageModel | None:
    """The configured summarizer's model (``spec`` overrides ``settings.summarizer``); None for
    evidence-only. Loading a local model happens here, once, not per job."""
    spec = spec or settings.summarizer
    found = SUMMARIZER_SPEC.fullmatch(spec)
    if found is None:
        raise ValueError(
            f"summarizer {spec!r}: expected evidence-only, smollm2, openai:URL#MODEL or "
            "transformers:DIR"
        )
    if spec == EVIDENCE_ONLY:
        return None
    # Only a local model needs transformers: evidence-only and served models never load it.
    from pipeline.backends.llm import TransformersBackend

    cache = settings.model_cache_dir or settings.data_dir / "models"
    if spec == SMOLLM2:
        directory = converted_directory(packaged_smollm2(), cache)
        local = TransformersBackend.from_directory(directory, name=SMOLLM2_NAME)
        return LanguageModel(local, local.grounding, SMOLLM2_TAU)
    if found["dir"]:
        path = Path(found["dir"])
        if path.suffix == ".gguf":
            path = converted_directory(path, cache)
        local = TransformersBackend.from_directory(path)
        return LanguageModel(local, local.grounding)
    key = settings.llm_api_key
    remote = OpenAIBackend(
        found["url"],
        found["model"],
        api_key=key.get_secret_value() if key else None,
        timeout_s=settings.model_timeout_s,
        max_tokens=settings.model_max_tokens,
        max_retries=settings.model_max_retries,
        response_format=None
        if settings.model_response_format == "detect"
        else settings.model_response_format,
    )
    scorer = settings.aura_scorer
    return LanguageModel(
        remote,
        TransformersBackend.from_directory(scorer).grounding if scorer else None,
        judges=True,
    )


def judging_model(settings: Settings, spec: str, fallback: Judge) -> ModelJudge:
    """The model ``spec`` names as the claim judge, ``fallback`` (the shipped verifier) answering
    where it gives no usable verdict; ValueError for a spec that names no model."""
    from pipeline.checking.model_judge import ModelJudge  # torch loads with the verifier only

    model = language_model(settings, spec)
    if model is None:
        raise ValueError("name a model; evidence-only judges nothing")
    return ModelJudge(model.backend, fallback, settings.answer_limits, settings.model_concurrency)
