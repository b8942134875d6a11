"""The detector: per sentence, the fact checker against its cited facts; entailment judged by the
trained claim verifier (``pipeline.backends.claim_judge``) against the cited evidence and the
nearest note sentences, and also by the drafting model when the deployment asks for it
(``model_entailment``: a large model's span-level judgement; a small one's says "supported" to
anything); and AURA when a grounding scorer is given."""

from __future__ import annotations

from typing import Any

from pipeline.backends.answer_schemas import entailment_schema
from pipeline.backends.chat import (
    ChatBackend,
    ModelOutputError,
    in_parallel,
)
from pipeline.checking.checker import FactIndex, check_cited_sentence
from pipeline.evidence.model import EvidenceState
from pipeline.summarizing.agent_calls import Draft, GroundingScorer, LoopSettings, ask_agent
from pipeline.text.rendering import render


def evidence_lines(
    sentence: Draft, facts: dict[str, str], notes: list[str], settings: LoopSettings
) -> list[str]:
    lines = [facts[c] for c in sentence.citations if c in facts]
    if settings.top_k and notes:
        from pipeline.backends.retrieval import nearest  # the encoder loads with its first use

        (found,) = nearest([sentence.text], notes, settings.top_k)
        lines += [notes[i] for i in found if notes[i] not in lines]
    return lines


def detect(
    sentences: list[Draft],
    state: EvidenceState,
    backend: ChatBackend,
    facts: dict[str, str],
    notes: list[str],
    settings: LoopSettings,
    grounding: GroundingScorer | None,
    context: str,
    source_spans: list[tuple[int, int]],
) -> None:
    index = FactIndex.of_state(state)
    for sentence in sentences:
        sentence.checks = check_cited_sentence(
            sentence.text, sentence.citations, state, free_text=True, index=index
        )
        sentence.spans = []
    evidence = [evidence_lines(sentence, facts, notes, settings) for sentence in sentences]
    judge_by_verifier(sentences, evidence)
    if settings.model_entailment:
        judge_by_model(sentences, evidence, backend, settings)
    if grounding is not None and sentences:
        summary = " ".join(sentence.text for sentence in sentences)
        spans, cursor = [], 0
        for sentence in sentences:
            start = summary.index(sentence.text, cursor)
            spans.append((start, start + len(sentence.text)))
            cursor = start + len(sentence.text)
        for sentence, score in zip(
            sentences, grounding(context, source_spans, summary, spans), strict=True
        ):
            sentence.grounding = score


def judge_by_verifier(sentences: list[Draft], evidence: list[list[str]]) -> None:
    """The trained verifier's check on each sentence, all in one batch; its hard failure makes
    the sentence unsupported, and its reason goes to the fix agent with the other checks'."""
    if not sentences:
        return
    named = [
        (f"its cited facts ({', '.join(s.citations)}) and " if s.citations else "")
        + "the nearest note sentences"
        for s in sentences
    ]
    windows = ["\n".join(lines) for lines in evidence]
    # The verifier (and torch) load with the first judgement, never with the agentic loop's
    # import: the app and the CLI import the loop whatever they draft with.
    from pipeline.backends.claim_judge import default_judge
    from pipeline.checking.entailment import judged

    checks = judged(default_judge(), [s.text for s in sentences], windows, named)
    for sentence, check in zip(sentences, checks, strict=True):
        sentence.checks.append(check)
        hard_failure = not check.passed and check.severity == "hard"
        sentence.entailment = "unsupported" if hard_failure else "supported"


def judge_by_model(
    sentences: list[Draft], evidence: list[list[str]], backend: ChatBackend, settings: LoopSettings
) -> None:
    """The drafting model's span-level judgement (AgenticSum's structured annotation), on top of
    the verifier's: either one finding a sentence unsupported flags it."""
    prompts = [
        render(
            "prompts/entailment.txt.j2",
            sentence=sentence.text,
            evidence=lines,
        )
        for sentence, lines in zip(sentences, evidence, strict=True)
    ]

    schema = entailment_schema(settings.limits)

    def judge(prompt: str) -> dict[str, Any]:
        try:
            return ask_agent(backend, prompt, ["label"], schema, settings)
        except ModelOutputError:
            # No usable verdict: the sentence is not judged supported, so it stays flagged.
            return {"label": "unsupported", "spans": ["the model gave no usable verdict"]}

    for sentence, verdict in zip(
        sentences, in_parallel(judge, prompts, settings.concurrency), strict=True
    ):
        if verdict.get("label") != "supported":
            sentence.entailment = "unsupported"
            sentence.spans = [str(span) for span in verdict.get("spans", []) if str(span).strip()]


def low_grounding(sentence: Draft, settings: LoopSettings) -> bool:
    return sentence.grounding is not None and sentence.grounding < settings.tau
