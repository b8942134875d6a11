"""The agentic summarizer: draft, detect, fix, and a supervisor that decides when to stop.

The narrative section (hospital course) is written by a language model; the structured sections
(medications, allergies, results...) stay those of the evidence-only summarizer. Each pass:

- **detect**, per sentence: the fact checker (against the sentence's cited facts), entailment
  judged by the model against the cited evidence plus the top-k most similar note sentences
  (MiniLM), and AURA when a grounding scorer is given. Flagged: entailment fails, AURA < τ, or a
  check fails.
- **supervisor**: stops when nothing is flagged; when the mean AURA moved less than ε; when no new
  sentence is flagged (H(t) \\ H(t−1) = ∅); or at T_max. Every decision and its reason is kept.
- **fix**: rewrites (or deletes) only the flagged sentences; the others stay byte-identical; the
  result is re-segmented and detected again on the next pass.

Unlike the published AgenticSum code, detection runs on every pass (nothing is cached), the
model's answers are parsed strictly as JSON with a bounded retry (never by substring), and the loop
can run more than once. Note text reaches the model only inside <data> blocks, under a system
prompt that says such text is never an instruction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from pipeline.chat import ChatBackend, ask_json
from pipeline.checker import check_cited_sentence
from pipeline.evidence import EvidenceState, stable_id
from pipeline.evidence_summary import summarize_evidence
from pipeline.focus import TokenSalience
from pipeline.rendering import render
from pipeline.retrieval import nearest
from pipeline.sentences import split_sentences
from pipeline.settings import PipelineSettings
from pipeline.summary import NOT_DOCUMENTED, SectionKey, Sentence, SentenceFlag, Summary

GroundingScorer = Callable[
    [str, list[tuple[int, int]], str, list[tuple[int, int]]], list[float | None]
]
NARRATIVE: SectionKey = "hospital_course"


ENTAILMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"enum": ["supported", "unsupported"]},
        "spans": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 12}},
    },
    "required": ["label", "spans"],
}


def _sentences_schema(citable: list[str], ids: list[str] | None = None) -> dict[str, Any]:
    """Draft and fix answers: sentences citing only ids that exist (and, for fixes, which one)."""
    item: dict[str, Any] = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": 40},
            "citations": {"type": "array", "maxItems": 2, "items": {"enum": citable}},
        },
    }
    if ids is not None:
        item["properties"] = {"id": {"enum": ids}, **item["properties"]}
    return {
        "type": "object",
        "properties": {"sentences": {"type": "array", "maxItems": 4, "items": item}},
        "required": ["sentences"],
    }


class LoopSettings(BaseModel):
    """τ, ε, T_max and r; ``from_settings`` takes them from the deployment's settings."""

    tau: float = Field(0.35, ge=0, le=1)
    epsilon: float = Field(0.01, ge=0)
    max_iterations: int = Field(3, ge=1, le=10)
    ratio: float = Field(0.5, gt=0, le=1)
    top_k: int = Field(3, ge=0)
    json_retries: int = Field(2, ge=0, le=5)

    @classmethod
    def from_settings(cls, settings: PipelineSettings) -> LoopSettings:
        return cls(
            tau=settings.aura_tau,
            epsilon=settings.aura_epsilon,
            max_iterations=settings.max_iterations,
            ratio=settings.focus_ratio,
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
        return (
            bool(self.spans)
            or self.entailment == "unsupported"
            or any(not check.passed for check in self.checks)
        )


def _system() -> dict[str, str]:
    return {"role": "system", "content": render("prompts/system.txt.j2")}


def _evidence_lines(
    sentence: Draft, facts: dict[str, str], notes: list[str], settings: LoopSettings
) -> list[str]:
    lines = [facts[c] for c in sentence.citations if c in facts]
    if settings.top_k and notes:
        (found,) = nearest([sentence.text], notes, settings.top_k)
        lines += [notes[i] for i in found if notes[i] not in lines]
    return lines


def _detect(
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
    for sentence in sentences:
        sentence.checks = check_cited_sentence(
            sentence.text, sentence.citations, state, free_text=True
        )
        evidence = _evidence_lines(sentence, facts, notes, settings)
        prompt = render("prompts/entailment.txt.j2", sentence=sentence.text, evidence=evidence)
        verdict = ask_json(
            backend,
            [_system(), {"role": "user", "content": prompt}],
            ["label"],
            settings.json_retries,
            ENTAILMENT_SCHEMA,
        )
        sentence.entailment = "supported" if verdict.get("label") == "supported" else "unsupported"
        sentence.spans = [str(span) for span in verdict.get("spans", []) if str(span).strip()]
        if sentence.entailment == "supported":
            sentence.spans = []
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


def _low_grounding(sentence: Draft, settings: LoopSettings) -> bool:
    return sentence.grounding is not None and sentence.grounding < settings.tau


def _fix(
    flagged: list[Draft],
    backend: ChatBackend,
    facts: dict[str, str],
    notes: list[str],
    settings: LoopSettings,
) -> dict[int, list[Draft]]:
    items = [
        {
            "id": str(index),
            "text": sentence.text,
            "spans": sentence.spans
            + [span for check in sentence.checks if not check.passed for span in check.spans],
            "evidence": _evidence_lines(sentence, facts, notes, settings),
        }
        for index, sentence in enumerate(flagged)
    ]
    prompt = render("prompts/fix.txt.j2", flagged=items)
    answer = ask_json(
        backend,
        [_system(), {"role": "user", "content": prompt}],
        ["sentences"],
        settings.json_retries,
        _sentences_schema(list(facts), [str(index) for index in range(len(flagged))]),
    )
    replaced: dict[int, list[Draft]] = {}
    for item in answer["sentences"]:
        index = int(item.get("id", -1))
        if not 0 <= index < len(flagged):
            continue
        text = item.get("text")
        citations = [str(c) for c in item.get("citations", flagged[index].citations)]
        if not text:
            replaced[index] = []
            continue
        replaced[index] = [
            Draft(span.text, citations)
            for span in split_sentences(str(text))
            if span.kind != "header"
        ]
    return replaced


def agentic_summary(
    state: EvidenceState,
    backend: ChatBackend,
    *,
    settings: LoopSettings | None = None,
    grounding: GroundingScorer | None = None,
    salience: TokenSalience | None = None,
) -> Summary:
    """The summary with a model-written, checked and repaired hospital course.

    Pass the state from :func:`pipeline.extraction.with_model_extraction` to draft from the
    model's quoted extractions too; build the Composition from that same state.
    """
    settings = settings or LoopSettings()
    base = summarize_evidence(state, ratio=settings.ratio, salience=salience)
    facts = {
        fact_id: sentence.text
        for section in base.sections
        if section.key not in {"needs_review"}
        for sentence in section.sentences
        for fact_id in sentence.citations
    }
    # The note sentences FOCUS kept; the course told from the structured record is in ``facts``.
    course = [
        sentence
        for sentence in base.section(NARRATIVE).sentences
        if all(state.fact(c).category == "course" for c in sentence.citations)
    ]
    notes = [sentence.text for sentence in course]
    fact_items = [{"id": fact_id, "text": text} for fact_id, text in facts.items()]
    note_items = [{"id": sentence.citations[0], "text": sentence.text} for sentence in course]
    prompt = render("prompts/draft.txt.j2", facts=fact_items, notes=note_items)
    source_start = prompt.index("<data>")
    source_spans = [(source_start, len(prompt))]
    answer = ask_json(
        backend,
        [_system(), {"role": "user", "content": prompt}],
        ["sentences"],
        settings.json_retries,
        _sentences_schema(list(facts)),
    )
    sentences = [
        Draft(span.text, [str(c) for c in item.get("citations", [])])
        for item in answer["sentences"]
        for span in split_sentences(str(item.get("text", "")))
        if span.kind != "header"
    ]
    decisions: list[str] = []
    previous: set[str] = set()
    previous_mean: float | None = None
    stop_reason = "budget"
    iteration = 0
    for iteration in range(1, settings.max_iterations + 1):
        _detect(sentences, state, backend, facts, notes, settings, grounding, prompt, source_spans)
        flagged = [s for s in sentences if s.flagged or _low_grounding(s, settings)]
        current = {s.text for s in flagged}
        scores = [s.grounding for s in sentences if s.grounding is not None]
        mean = sum(scores) / len(scores) if scores else None
        if not flagged:
            stop_reason = "no_flags"
        elif (
            iteration > 1
            and mean is not None
            and previous_mean is not None
            and abs(mean - previous_mean) < settings.epsilon
        ):
            stop_reason = "grounding_converged"
        elif iteration > 1 and not current - previous:
            stop_reason = "no_new_flags"
        elif iteration == settings.max_iterations:
            stop_reason = "budget"
        else:
            stop_reason = ""
        decisions.append(
            f"pass {iteration}: {len(flagged)} of {len(sentences)} sentences flagged"
            + (f", mean AURA {mean:.3f}" if mean is not None else "")
            + (f"; stop: {stop_reason}" if stop_reason else "; fix the flagged sentences")
        )
        if stop_reason:
            break
        replaced = _fix(flagged, backend, facts, notes, settings)
        rebuilt: list[Draft] = []
        for sentence in sentences:
            if sentence in flagged and flagged.index(sentence) in replaced:
                rebuilt += replaced[flagged.index(sentence)]
            else:
                rebuilt.append(sentence)
        sentences = rebuilt
        previous, previous_mean = current, mean
    narrative = []
    for sentence in sentences:
        flags = []
        if sentence.entailment == "unsupported":
            flags.append(
                SentenceFlag(code="entailment", reason="; ".join(sentence.spans) or "unsupported")
            )
        if _low_grounding(sentence, settings):
            flags.append(
                SentenceFlag(
                    code="low_grounding", reason=f"AURA {sentence.grounding:.2f} < {settings.tau}"
                )
            )
        narrative.append(
            Sentence(
                id=stable_id("s", NARRATIVE, sentence.text, *sentence.citations),
                section=NARRATIVE,
                text=sentence.text,
                citations=sentence.citations,
                grounding=sentence.grounding,
                entailment=sentence.entailment,
                checks=sentence.checks,
                flags=flags,
            )
        )
    sections = [
        section.model_copy(
            update={
                "sentences": narrative,
                "empty_reason": None if narrative else NOT_DOCUMENTED,
            }
        )
        if section.key == NARRATIVE
        else section
        for section in base.sections
    ]
    return base.model_copy(
        update={
            "sections": sections,
            "backend": backend.name,
            "backend_version": backend.version,
            "iterations": iteration,
            "stop_reason": stop_reason,
            "decisions": decisions,
        }
    )
