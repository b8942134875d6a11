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

from pipeline.backends.answer_schemas import extraction_schema
from pipeline.backends.chat import (
    ChatBackend,
    ModelOutputError,
    Progress,
    ask_json,
    in_parallel,
    no_progress,
)
from pipeline.clinical.agent import run_agent_loop
from pipeline.clinical.medications import strength_of
from pipeline.errors import ModelError
from pipeline.evidence.model import (
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
from pipeline.ingestion.documents import quote_refs
from pipeline.settings import RENEWAL_WINDOW, SchemaLimits
from pipeline.summarizing.note_chunks import chunk_limits, chunk_measure, chunks
from pipeline.text.echoes import echoes_prompt
from pipeline.text.rendering import render


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


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One call's worth of a note: a span of a page, and where it stands in the page."""

    document: SourceDocument
    number: int  # the note's place among those read, from 1
    page: int
    text: str  # the whole page, so that a quote is located at its page offsets
    start: int
    end: int
    part: int
    parts: int


def _extract_chunk(chunk: _Chunk, backend: ChatBackend, limits: SchemaLimits) -> Extraction:
    """The facts one chunk states, each located at its quote; echoes and lost quotes rejected."""
    result = Extraction()
    document, text = chunk.document, chunk.text
    piece = text[chunk.start : chunk.end]
    system = {"role": "system", "content": render("prompts/system.txt.j2")}
    prompt = render(
        "prompts/extract.txt.j2", title=document.title or document.id, page=chunk.page, text=piece
    )
    answer = ask_json(
        backend,
        [system, {"role": "user", "content": prompt}],
        ["items"],
        2,
        extraction_schema(chunk_limits(limits, piece)),
        salvage="items",
    )
    seen: set[str] = set()
    for item in answer["items"] if isinstance(answer["items"], list) else []:
        attributes = _attributes(item) if isinstance(item, dict) else None
        if attributes is None:
            continue
        quote = str(item.get("quote", ""))
        fact_id = stable_id("extracted", document.id, chunk.page, attributes.category, quote)
        if fact_id in seen:
            continue  # the same fact again: a model repeating itself
        seen.add(fact_id)
        fact = Fact(id=fact_id, category=attributes.category, attributes=attributes)
        if echoes_prompt(str(item.get("text", "")), prompt, piece):
            reason = f"echoes the prompt, not the note: {item.get('text')!r}"
            result.rejected.append(RejectedFact(fact=fact, reason=reason))
            result.trace("rejected", reason, document)
            continue
        found = locate_quote(text[: chunk.end], quote, chunk.start)
        if found is None:
            reason = f"quote not found in {document.id} page {chunk.page}: {quote!r}"
            result.rejected.append(RejectedFact(fact=fact, reason=reason))
            result.trace("rejected", reason, document)
            continue
        start, end = found
        sources = quote_refs(document, chunk.page, start, end, text[start:end])
        result.facts.append(fact.model_copy(update={"sources": sources}))
    return result


def extract_from_notes(
    state: EvidenceState,
    backend: ChatBackend,
    *,
    limits: SchemaLimits | None = None,
    progress: Progress = no_progress,
    strict: bool = False,
    budget_s: float | None = None,
    concurrency: int = 1,
    clock: Callable[[], float] = time.monotonic,
) -> Extraction:
    """Facts the model finds in the state's readable note pages (the stay's notes only), each
    quoted at its offsets.

    The pages are read in chunks sized for the model (:func:`chunk_measure`), up to
    ``concurrency`` chunks at once; the facts come back in the notes' order whatever finishes
    first. ``strict``: an unreachable model is raised, not recorded on the document.
    ``budget_s``: past it, no further chunk is sent and what was read is kept; each part not read
    is recorded on its document ("not read by the model"), so the draft says so."""
    limits = limits or SchemaLimits()
    readable = [
        d for d in state.documents if any(page.has_text for page in d.pages) and not d.other_patient
    ]
    work = _chunks_of(readable, *chunk_measure(backend, limits))
    started = clock()

    def read(chunk: _Chunk) -> Extraction:
        where = f"page {chunk.page}" + (
            f" (part {chunk.part} of {chunk.parts})" if chunk.parts > 1 else ""
        )
        if budget_s is not None and clock() - started > budget_s:
            return _not_read(
                chunk.document,
                "not_read",
                f"{where} not read by the model: extraction's time budget ({budget_s:g} s) ran out",
            )
        progress(f"extracting note {chunk.number} of {len(readable)}, {where}")
        try:
            return _extract_chunk(chunk, backend, limits)
        except ModelError as error:
            # An unreachable model fails a strict draft whole; an answer that stays unusable
            # after its retries costs only its part of the page, which the draft names.
            if strict and not isinstance(error, ModelOutputError):
                raise
            return _not_read(chunk.document, "error", f"{where} not read by the model: {error}")

    return _merged(in_parallel(read, work, concurrency))


def _chunks_of(
    readable: list[SourceDocument], limit: int, size: Callable[[str], int]
) -> list[_Chunk]:
    """Every readable page of the notes cut into chunks, in the notes' order."""
    work: list[_Chunk] = []
    for number, document in enumerate(readable, start=1):
        for page in document.pages:
            if page.has_text:
                spans = chunks(page.text, limit, size)
                work += [
                    _Chunk(document, number, page.number, page.text, start, end, part, len(spans))
                    for part, (start, end) in enumerate(spans, start=1)
                ]
    return work


def _merged(parts: list[Extraction]) -> Extraction:
    result = Extraction()
    for part in parts:
        result.facts += part.facts
        result.rejected += part.rejected
        result.events += part.events
        for document_id, messages in part.errors.items():
            result.errors.setdefault(document_id, []).extend(messages)
    return result


def _not_read(document: SourceDocument, action: str, message: str) -> Extraction:
    result = Extraction(errors={document.id: [message]})
    result.trace(action, message, document)
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
    concurrency: int = 1,
) -> EvidenceState:
    """The state with the model's quoted extractions, reconciled, checked and validated again."""
    found = extract_from_notes(
        state,
        backend,
        limits=limits,
        progress=progress,
        strict=strict,
        budget_s=budget_s,
        concurrency=concurrency,
    )
    extended = with_extraction(state, found)
    return run_agent_loop(
        extended, extended.step_count + max_agent_steps, renewal_window=renewal_window
    )
