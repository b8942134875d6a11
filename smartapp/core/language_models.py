"""The summarizer a deployment configures, built once per process from the settings.

``evidence-only`` (the default) drafts from the evidence alone; ``openai:URL#MODEL`` asks an
OpenAI-compatible server (vLLM, TGI, llama.cpp server, Ollama, a gateway); ``transformers:DIR``
runs a local Hugging Face causal LM in the worker. A local causal LM directory named by
``aura_scorer`` scores grounding (AURA) for a remote model; a local model scores its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.agentic import GroundingScorer
from pipeline.chat import ChatBackend
from smartapp.core.openai_backend import OpenAIBackend
from smartapp.core.settings import SUMMARIZER_PATTERN, Settings

EVIDENCE_ONLY = "evidence-only"
SUMMARIZER_SPEC = re.compile(SUMMARIZER_PATTERN)


@dataclass(frozen=True, slots=True)
class LanguageModel:
    """The model that drafts, and what scores its sentences' grounding (if anything)."""

    backend: ChatBackend
    grounding: GroundingScorer | None


def language_model(settings: Settings, spec: str | None = None) -> LanguageModel | None:
    """The configured summarizer's model (``spec`` overrides ``settings.summarizer``); None for
    evidence-only. Loading a local model happens here, once, not per job."""
    from pipeline.llm import TransformersBackend

    spec = spec or settings.summarizer
    found = SUMMARIZER_SPEC.fullmatch(spec)
    if found is None:
        raise ValueError(
            f"summarizer {spec!r}: expected evidence-only, openai:URL#MODEL or transformers:DIR"
        )
    if spec == EVIDENCE_ONLY:
        return None
    if found["dir"]:
        local = TransformersBackend.from_directory(Path(found["dir"]))
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
        remote, TransformersBackend.from_directory(scorer).grounding if scorer else None
    )
