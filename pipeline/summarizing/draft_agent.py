"""The draft agent: what it is given (the citable facts most relevant first, fitted to the
model's context window, and the course's note sentences) and what of its answer may reach the
draft."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.backends.answer_schemas import answer_budget, sentences_schema
from pipeline.backends.chat import (
    ChatBackend,
    token_counter,
)
from pipeline.checking.claims import claim_problem
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import SectionKey, Summary
from pipeline.summarizing.agent_calls import NARRATIVE, Draft, LoopSettings
from pipeline.text.echoes import restates_instructions
from pipeline.text.rendering import render
from pipeline.text.sentences import split_sentences


def drafts_of(
    answer: dict[str, Any],
    prompt: str,
    citable: Mapping[str, str],
    default_citations: list[str] | None = None,
) -> list[Draft]:
    """The sentences of a draft or fix answer, re-segmented (a model may write two in one),
    without meta text that restates the prompt (``pipeline.text.echoes``) or makes no clinical
    claim (``pipeline.checking.claims``): neither ever reaches the draft. Only the ids the model
    was given are kept as citations: a server that ignores the answer's schema may invent one,
    and a sentence left citing nothing is then unsupported, for the detector to flag."""
    drafts = []
    for item in answer.get("sentences") or []:
        if not isinstance(item, dict) or not item.get("text"):
            continue
        cited = item.get("citations")
        given = [str(c) for c in cited] if isinstance(cited, list) else default_citations or []
        citations = [c for c in given if c in citable]
        drafts += [
            Draft(span.text, citations)
            for span in split_sentences(str(item["text"]))
            if span.kind != "header" and kept_in_draft(span.text, prompt)
        ]
    return drafts


def kept_in_draft(sentence: str, prompt: str) -> bool:
    """Whether a sentence the model wrote may reach the draft: not meta text restating the
    prompt, and a clinical claim (not a question, a fragment or text about the summary)."""
    return not restates_instructions(sentence, prompt) and claim_problem(sentence) is None


# What the course is told from, most relevant first: facts past the model's context window are
# left out from the end of this order (the course's own sentences, diagnoses and procedures
# stay; social history goes first).
COURSE_RELEVANCE: tuple[SectionKey, ...] = (
    "hospital_course",
    "diagnoses",
    "procedures",
    "results",
    "medications",
    "stay",
    "condition_at_discharge",
    "follow_up",
    "active_problems",
    "allergies",
    "pending_results",
    "social_history",
)


def fitted_facts(
    backend: ChatBackend,
    facts: list[dict[str, str]],
    notes: list[dict[str, str]],
    answer_tokens: int,
) -> list[dict[str, str]]:
    """The facts, most relevant first, that fit the draft prompt in the model's context window
    with room for its answer (a quarter of the window at least). A backend that does not say
    its window (``context_tokens``) or cannot count (``count_tokens``) gets them all."""
    counter = token_counter(backend)
    if counter is None:
        return facts
    window, count = counter
    room = window - min(answer_tokens, window // 4)
    kept = list(facts)
    while kept:
        if count(render("prompts/draft.txt.j2", facts=kept, notes=notes)) <= room:
            break
        kept = kept[: len(kept) - max(1, len(kept) // 10)]
    return kept


@dataclass(frozen=True, slots=True)
class DraftInputs:
    """What the draft agent is given: the citable texts by id, the course's note sentences (what
    the entailment judge reads beside the facts), and the prompt with its source span."""

    facts: dict[str, str]
    notes: list[str]
    schema: dict[str, Any]
    prompt: str


def draft_inputs(
    state: EvidenceState, base: Summary, backend: ChatBackend, settings: LoopSettings
) -> DraftInputs:
    by_relevance = sorted(
        (section for section in base.sections if section.key in COURSE_RELEVANCE),
        key=lambda section: COURSE_RELEVANCE.index(section.key),
    )
    facts = {
        fact_id: sentence.text
        for section in by_relevance
        for sentence in section.sentences
        for fact_id in sentence.citations
    }
    # The note sentences FOCUS kept; the course told from the structured record is in ``facts``.
    course = [
        sentence
        for sentence in base.section(NARRATIVE).sentences
        if all(state.fact(c).category == "course" for c in sentence.citations)
    ]
    fact_items = [{"id": fact_id, "text": text} for fact_id, text in facts.items()]
    note_items = [{"id": sentence.citations[0], "text": sentence.text} for sentence in course]
    answer_tokens = answer_budget(sentences_schema(settings.limits, list(facts)))
    fact_items = fitted_facts(backend, fact_items, note_items, answer_tokens)
    # The model may cite what it was given: the facts that fit, and the course's sentences.
    citable = {item["id"]: facts[item["id"]] for item in fact_items} | {
        item["id"]: item["text"] for item in note_items
    }
    return DraftInputs(
        facts=citable,
        notes=[sentence.text for sentence in course],
        schema=sentences_schema(settings.limits, list(citable)),
        prompt=render("prompts/draft.txt.j2", facts=fact_items, notes=note_items),
    )
