"""The fix agent: rewrites (or deletes) only the flagged sentences, one model call each."""

from __future__ import annotations

from typing import Any

from pipeline.backends.answer_schemas import sentences_schema
from pipeline.backends.chat import (
    ChatBackend,
    ModelOutputError,
    in_parallel,
)
from pipeline.summarizing.agent_calls import Draft, LoopSettings, ask_agent
from pipeline.summarizing.detect_agent import evidence_lines
from pipeline.summarizing.draft_agent import drafts_of
from pipeline.text.rendering import render


def fix(
    flagged: list[Draft],
    backend: ChatBackend,
    facts: dict[str, str],
    notes: list[str],
    settings: LoopSettings,
) -> list[list[Draft]]:
    """Each flagged sentence rewritten (into none, one or several), one model call each."""
    prompts = [
        render(
            "prompts/fix.txt.j2",
            text=sentence.text,
            spans=sentence.spans
            + [span for check in sentence.checks if not check.passed for span in check.spans],
            reasons=[check.detail for check in sentence.checks if not check.passed],
            evidence=evidence_lines(sentence, facts, notes, settings),
        )
        for sentence in flagged
    ]
    schema = sentences_schema(settings.limits, list(facts), for_fix=True)

    def rewrite(prompt: str) -> dict[str, Any] | None:
        try:
            return ask_agent(backend, prompt, ["sentences"], schema, settings)
        except ModelOutputError:
            return None  # no usable fix: the sentence stays as it was, flagged

    answers = in_parallel(rewrite, prompts, settings.concurrency)
    return [
        [sentence]
        if answer is None
        else drafts_of(answer, prompt, facts, default_citations=sentence.citations)
        for sentence, answer, prompt in zip(flagged, answers, prompts, strict=True)
    ]
