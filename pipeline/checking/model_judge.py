"""A language model as the claim judge, for a deployment that has one it trusts more than the
small verifier: AgenticSum's span-level entailment prompt, answered as JSON of a schema.

The answer is a label, not a probability: "supported" reads as P(entailed) 1, "unsupported" as
P(entailed) 0, which the meaning check makes hard. A claim the
model gives no usable answer for is judged by the fallback, the shipped verifier, so a model
that fails neither clears a claim nor stops the check. The verifier's cut-offs stay the
configuration: a label is at either end of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.backends.answer_schemas import entailment_schema
from pipeline.backends.chat import ChatBackend, ModelOutputError, ask_json, in_parallel
from pipeline.backends.claim_judge import JudgeConfig, Judgement
from pipeline.checking.entailment import Judge
from pipeline.settings import SchemaLimits
from pipeline.text.rendering import render

# An answer the model could not make usable is asked again this many times.
RETRIES = 1


class ModelJudge:
    """The model's verdict on each (claim, evidence) pair; the fallback's where the model gives
    none."""

    def __init__(
        self,
        backend: ChatBackend,
        fallback: Judge,
        limits: SchemaLimits | None = None,
        concurrency: int = 4,
    ) -> None:
        self.backend = backend
        self.fallback = fallback
        self.schema = entailment_schema(limits or SchemaLimits())
        self.concurrency = concurrency

    @property
    def config(self) -> JudgeConfig:
        return self.fallback.config

    def _verdict(self, pair: tuple[str, str]) -> dict[str, Any] | None:
        claim, evidence = pair
        system = {"role": "system", "content": render("prompts/system.txt.j2")}
        prompt = render("prompts/entailment.txt.j2", sentence=claim, evidence=evidence.splitlines())
        messages = [system, {"role": "user", "content": prompt}]
        try:
            return ask_json(self.backend, messages, ["label"], RETRIES, self.schema)
        except ModelOutputError:
            return None

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        verdicts = in_parallel(self._verdict, list(pairs), self.concurrency)
        unanswered = [i for i, verdict in enumerate(verdicts) if verdict is None]
        fallen_back = dict(
            zip(unanswered, self.fallback.judge([pairs[i] for i in unanswered]), strict=True)
        )
        judgements = []
        for i, verdict in enumerate(verdicts):
            if verdict is None:
                judgements.append(fallen_back[i])
                continue
            supported = verdict.get("label") == "supported"
            judgements.append(Judgement(entailed=1.0 if supported else 0.0, contradicted=0.0))
        return judgements
