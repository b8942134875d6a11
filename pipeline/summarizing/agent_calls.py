"""What every agent of the loop shares: the loop's settings (τ, ε, T_max, r…), a draft sentence
as it moves through the passes, and one question to the model under the system prompt."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from pipeline.backends.chat import (
    ChatBackend,
    ask_json,
)
from pipeline.evidence.summary import SectionKey
from pipeline.settings import DEFAULT_AURA_TAU, RENEWAL_WINDOW, PipelineSettings, SchemaLimits
from pipeline.text.rendering import render

GroundingScorer = Callable[
    [str, list[tuple[int, int]], str, list[tuple[int, int]]], list[float | None]
]

NARRATIVE: SectionKey = "hospital_course"


class LoopSettings(BaseModel):
    """τ, ε, T_max and r, concurrent model calls and the answer schemas' limits;
    ``from_settings`` takes them from the deployment's settings."""

    tau: float = Field(DEFAULT_AURA_TAU, ge=0, le=1)
    epsilon: float = Field(0.01, ge=0)
    max_iterations: int = Field(3, ge=1, le=10)
    ratio: float = Field(0.5, gt=0, le=1)
    top_k: int = Field(3, ge=0)
    # The drafting model judges entailment too, beside the trained verifier.
    model_entailment: bool = True
    json_retries: int = Field(2, ge=0, le=5)
    concurrency: int = Field(4, ge=1, le=64)
    limits: SchemaLimits = Field(default_factory=SchemaLimits)
    renewal_window_days: int = Field(RENEWAL_WINDOW.days, ge=1)
    extraction_budget_s: float | None = Field(None, gt=0)
    # The deployment's drafting settings (its clinical tables among them), for the parts of the
    # summary told from the evidence.
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)

    @classmethod
    def from_settings(
        cls,
        settings: PipelineSettings,
        model_tau: float | None = None,
        model_judges: bool = False,
    ) -> LoopSettings:
        """The deployment's settings; τ, unless the deployment sets it, is the drafting model's
        own calibrated one (``model_tau``), else AgenticSum's; the model judges entailment,
        unless the deployment says, where ``model_judges`` (it is served remotely)."""
        tau = settings.aura_tau if settings.aura_tau is not None else model_tau
        return cls(
            tau=DEFAULT_AURA_TAU if tau is None else tau,
            epsilon=settings.aura_epsilon,
            max_iterations=settings.max_iterations,
            model_entailment=(
                model_judges if settings.model_entailment is None else settings.model_entailment
            ),
            ratio=settings.focus_ratio,
            concurrency=settings.model_concurrency,
            limits=settings.answer_limits,
            renewal_window_days=settings.medication_renewal_window_days,
            extraction_budget_s=settings.extraction_budget_s,
            pipeline=settings,
        )


@dataclass(slots=True)
class Draft:
    text: str
    citations: list[str]
    checks: list[Any] = field(default_factory=list)
    entailment: str | None = None
    spans: list[str] = field(default_factory=list)
    grounding: float | None = None

    @property
    def flagged(self) -> bool:
        """To be fixed: the model found it unsupported, or a hard check failed."""
        return (
            bool(self.spans)
            or self.entailment == "unsupported"
            or any(not check.passed for check in self.checks if check.severity == "hard")
        )


def ask_agent(
    backend: ChatBackend,
    prompt: str,
    required: list[str],
    schema: dict[str, Any],
    settings: LoopSettings,
) -> dict[str, Any]:
    """One agent's question under the system prompt, answered as JSON of ``schema``."""
    system = {"role": "system", "content": render("prompts/system.txt.j2")}
    # A draft or a fix cut short keeps its complete sentences (each checked like any other).
    salvage = "sentences" if required == ["sentences"] else None
    return ask_json(
        backend,
        [system, {"role": "user", "content": prompt}],
        required,
        settings.json_retries,
        schema,
        salvage=salvage,
    )
