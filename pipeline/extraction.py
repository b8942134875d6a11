"""Evidence extraction from notes by a language model, held to exact quotes.

Per page chunk the model lists diagnoses, medications, allergies, procedures, pending results and
follow-up, each with the quote that states it. Every quote is located in the page text (exact
first, then tolerant of whitespace and case) and becomes a SourceRef with offsets; a fact whose
quote is not found is rejected and traced, never kept. A model or parse failure is recorded on the
document and in the trace, so a failed extraction can never read as "Not documented"; with
``strict`` (the app) it is raised instead, so that a draft is either wholly the model's or
wholly evidence-only.
Extracted facts add to the facts mapped from structured resources; the agent loop then reconciles
and checks them with the rest, so a note that disagrees with an order surfaces as a conflict.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pipeline.agent import run_agent_loop
from pipeline.answer_schemas import SchemaLimits, extraction_schema
from pipeline.chat import ChatBackend, ModelOutputError, Progress, ask_json, no_progress
from pipeline.documents import quote_refs
from pipeline.echoes import echoes_prompt
from pipeline.errors import ModelError
from pipeline.evidence import (
    AllergyAttributes,
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    NarrativeAttributes,
    PendingResultAttributes,
    ProcedureAttributes,
    RejectedFact,
    SourceDocument,
    TraceEvent,
    group_facts,
    stable_id,
)
from pipeline.medications import strength_of
from pipeline.reconcile import RENEWAL_WINDOW
from pipeline.rendering import render
from pipeline.sentences import split_sentences

CHUNK_CHARS = 4000


@dataclass(slots=True)
class Extraction:
    facts: list[Fact] = field(default_factory=list)
    rejected: list[RejectedFact] = field(default_factory=list)
    events: list[TraceEvent] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def trace(self, action: str, detail: str, document: SourceDocument) -> None:
        self.events.append(
            TraceEvent(step=0, agent="extract", action=action, detail=detail, document=document.id)
        )


def locate_quote(text: str, quote: str, start: int = 0) -> tuple[int, int] | None:
    """Where ``quote`` is in ``text``: exactly, else ignoring whitespace runs and case."""
    quote = quote.strip()
    if not quote:
        return None
    exact = text.find(quote, start)
    if exact >= 0:
        return exact, exact + len(quote)
    words = quote.split()
    pattern = r"\s+".join(re.escape(word) for word in words)
    found = re.compile(pattern, re.IGNORECASE).search(text, start)
    return (found.start(), found.end()) if found else None


def chunks(text: str, limit: int = CHUNK_CHARS) -> list[tuple[int, int]]:
    """Spans of ``text`` of at most about ``limit`` characters, cut between sentences."""
    spans: list[tuple[int, int]] = []
    start = 0
    for sentence in split_sentences(text):
        if sentence.end - start > limit and sentence.start > start:
            spans.append((start, sentence.start))
            start = sentence.start
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _attributes(item: dict[str, Any]) -> Any:
    category = str(item.get("category", ""))
    text = str(item.get("text") or item.get("quote") or "").strip()
    if category == "diagnosis":
        return DiagnosisAttributes(display=text, role="documented_in_note")
    if category == "medication":
        return MedicationAttributes(
            name=text,
            strength=strength_of(text),
            dose=item.get("dose") or None,
            frequency=item.get("frequency") or None,
            route=item.get("route") or None,
            status=str(item.get("status") or "unknown"),
            phase="unknown",
            phase_rule="mentioned in a note; the note does not place it in the stay",
        )
    if category == "allergy":
        return AllergyAttributes(substance=text)
    if category == "procedure":
        return ProcedureAttributes(name=text, status="documented")
    if category == "pending_result":
        return PendingResultAttributes(name=text, status="pending")
    if category == "follow_up":
        return NarrativeAttributes(category="follow_up", text=text)
    return None


def chunk_limits(limits: SchemaLimits, chunk: str) -> SchemaLimits:
    """The schema's bounds for one chunk: quotes no longer than the chunk, and at most two facts
    per sentence of it (a page of ten sentences cannot state 150 facts), so that each call's
    token budget is sized to its input."""
    sentences = max(1, len(split_sentences(chunk)))
    return limits.model_copy(
        update={
            "quote_chars": max(8, min(limits.quote_chars, len(chunk))),
            "item_chars": max(4, min(limits.item_chars, len(chunk))),
            "extraction_items": min(limits.extraction_items, 2 * sentences + 2),
        }
    )


def _extract_page(
    document: SourceDocument,
    page: int,
    text: str,
    backend: ChatBackend,
    result: Extraction,
    limits: SchemaLimits,
) -> None:
    system = {"role": "system", "content": render("prompts/system.txt.j2")}
    for chunk_start, chunk_end in chunks(text):
        chunk = text[chunk_start:chunk_end]
        prompt = render(
            "prompts/extract.txt.j2", title=document.title or document.id, page=page, text=chunk
        )
        answer = ask_json(
            backend,
            [system, {"role": "user", "content": prompt}],
            ["items"],
            2,
            extraction_schema(chunk_limits(limits, chunk)),
            salvage="items",
        )
        seen: set[str] = set()
        for item in answer["items"] if isinstance(answer["items"], list) else []:
            attributes = _attributes(item) if isinstance(item, dict) else None
            if attributes is None:
                continue
            quote = str(item.get("quote", ""))
            fact_id = stable_id("extracted", document.id, page, attributes.category, quote)
            if fact_id in seen:
                continue  # the same fact again: a model repeating itself
            seen.add(fact_id)
            fact = Fact(id=fact_id, category=attributes.category, attributes=attributes)
            if echoes_prompt(str(item.get("text", "")), prompt, chunk):
                reason = f"echoes the prompt, not the note: {item.get('text')!r}"
                result.rejected.append(RejectedFact(fact=fact, reason=reason))
                result.trace("rejected", reason, document)
                continue
            found = locate_quote(text[:chunk_end], quote, chunk_start)
            if found is None:
                reason = f"quote not found in {document.id} page {page}: {quote!r}"
                result.rejected.append(RejectedFact(fact=fact, reason=reason))
                result.trace("rejected", reason, document)
                continue
            start, end = found
            sources = quote_refs(document, page, start, end, text[start:end])
            result.facts.append(fact.model_copy(update={"sources": sources}))


def extract_from_notes(
    state: EvidenceState,
    backend: ChatBackend,
    *,
    limits: SchemaLimits | None = None,
    progress: Progress = no_progress,
    strict: bool = False,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Extraction:
    """Facts the model finds in the state's readable note pages, each quoted at its offsets.

    ``strict``: a model failure is raised, not recorded on the document. ``budget_s``: past it,
    extraction stops and keeps what it has; each page it did not read is recorded on its
    document ("not read by the model"), so the draft says so."""
    result = Extraction()
    readable = [
        d for d in state.documents if any(page.has_text for page in d.pages) and not d.other_patient
    ]
    started = clock()
    for number, document in enumerate(readable, start=1):
        progress(f"extracting note {number} of {len(readable)}")
        for page in document.pages:
            if not page.has_text:
                continue
            if budget_s is not None and clock() - started > budget_s:
                message = (
                    f"page {page.number} not read by the model: extraction's time budget "
                    f"({budget_s:g} s) ran out"
                )
                result.errors.setdefault(document.id, []).append(message)
                result.trace("not_read", message, document)
                continue
            try:
                _extract_page(
                    document, page.number, page.text, backend, result, limits or SchemaLimits()
                )
            except ModelError as error:
                # An unreachable model fails a strict draft whole; an answer that stays unusable
                # after its retries costs only that page, which the draft names as not read.
                if strict and not isinstance(error, ModelOutputError):
                    raise
                message = f"page {page.number} not read by the model: {error}"
                result.errors.setdefault(document.id, []).append(message)
                result.trace("error", message, document)
    return result


def with_extraction(state: EvidenceState, extraction: Extraction) -> EvidenceState:
    """The state with the extracted facts added, rejections and failures recorded."""
    documents = [
        document.model_copy(
            update={"errors": [*document.errors, *extraction.errors.get(document.id, [])]}
        )
        for document in state.documents
    ]
    known = {fact.id for fact in state.all_facts()}
    added = [fact for fact in extraction.facts if fact.id not in known]
    return state.model_copy(
        update={
            "documents": documents,
            "facts": group_facts([*state.all_facts(), *added]),
            "rejected_facts": [*state.rejected_facts, *extraction.rejected],
            "trace": [*state.trace, *extraction.events],
        }
    )


def with_model_extraction(
    state: EvidenceState,
    backend: ChatBackend,
    max_agent_steps: int = 12,
    *,
    limits: SchemaLimits | None = None,
    progress: Progress = no_progress,
    strict: bool = False,
    renewal_window: timedelta = RENEWAL_WINDOW,
    budget_s: float | None = None,
) -> EvidenceState:
    """The state with the model's quoted extractions, reconciled, checked and validated again."""
    found = extract_from_notes(
        state, backend, limits=limits, progress=progress, strict=strict, budget_s=budget_s
    )
    extended = with_extraction(state, found)
    return run_agent_loop(
        extended, extended.step_count + max_agent_steps, renewal_window=renewal_window
    )
