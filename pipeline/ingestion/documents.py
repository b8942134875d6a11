"""Source documents: an attachment read into pages, and the statements quoted from its sections.

Only statements a note states verbatim become facts here (chief complaint, hospital course,
plan and follow-up sentences, "no known allergies"), each quoted at its exact offsets. Medication
lists in notes are not turned into medication facts: structured orders are authoritative, and
extraction from free text is the language-model extractor's job, checked against the evidence.
"""

from __future__ import annotations

import hashlib
import re

from pipeline.evidence.mapped import PendingDocument
from pipeline.evidence.model import (
    AllergyAttributes,
    EncounterAttributes,
    Fact,
    NarrativeAttributes,
    SourceDocument,
    SourceRef,
    TraceEvent,
    stable_id,
)
from pipeline.ingestion.attachments import read_attachment
from pipeline.ingestion.ocr import OcrBudget
from pipeline.settings import PipelineSettings
from pipeline.text.sentences import Span, sentences_in, split_sections

_COURSE_SECTIONS = frozenset(
    {
        "history of present illness",
        "hpi",
        "hospital course",
        "brief hospital course",
        "clinical course",
        "assessment",
        "assessment and plan",
        "impression",
        "impression and plan",
    }
)
_FOLLOW_UP_SECTIONS = frozenset(
    {
        "plan",
        "follow up",
        "follow-up",
        "followup",
        "discharge instructions",
        "disposition",
        "recommendations",
    }
)
_COMPLAINT_SECTIONS = frozenset(
    {"chief complaint", "reason for admission", "reason for visit", "presenting complaint"}
)
_ALLERGY_SECTIONS = frozenset({"allergies", "allergy", "drug allergies"})
_SOCIAL_SECTIONS = frozenset({"social history", "social", "substance use", "habits"})
_CONDITION_SECTIONS = frozenset(
    {"condition at discharge", "discharge condition", "condition on discharge", "condition"}
)
MEDICATION_SECTIONS = frozenset(
    {
        "medications",
        "current medications",
        "home medications",
        "medications on admission",
        "admission medications",
        "outpatient medications",
    }
)
# Lists of what was prescribed in this note (Synthea's plan, a discharge prescription list).
PRESCRIPTION_SECTIONS = frozenset(
    {
        "the patient was prescribed the following medications",
        "discharge medications",
        "medications on discharge",
        "discharge prescriptions",
        "prescriptions",
    }
)
_NO_KNOWN_ALLERGIES = re.compile(
    r"\b(no known (drug )?allergies|nkda|nka|no allergies)\b", re.IGNORECASE
)


def document_id(data: bytes, encounter: str | None) -> str:
    """One id per attachment content within an encounter: duplicates presented twice share it."""
    return stable_id("doc", encounter or "", hashlib.sha256(data).hexdigest())


def ingest_document(
    pending: PendingDocument,
    encounter: str | None,
    settings: PipelineSettings,
    budget: OcrBudget | None = None,
) -> SourceDocument:
    """One document read; one that could not be fetched keeps its errors and no pages (its id
    then the mapping's key, since there are no bytes to hash)."""
    if pending.errors:
        read, identified = None, pending.key
    else:
        read = read_attachment(pending.data, pending.content_type, settings, budget)
        identified = document_id(pending.data, encounter)
    return SourceDocument(
        id=identified,
        sources=pending.sources,
        title=pending.title,
        date=pending.date,
        encounter=encounter,
        content_type=pending.content_type or "",
        pages=read.pages if read else [],
        errors=read.errors if read else pending.errors,
    )


def ingestion_events(documents: list[SourceDocument], step: int) -> list[TraceEvent]:
    events = []
    for document in documents:
        resource = document.sources[0].resource if document.sources else None
        if document.errors:
            for error in document.errors:
                events.append(
                    TraceEvent(
                        step=step,
                        agent="ingest",
                        action="document_error",
                        detail=error,
                        resource=resource,
                        document=document.id,
                    )
                )
        read = sum(page.has_text for page in document.pages)
        ocr = sum(page.ocr_applied for page in document.pages)
        events.append(
            TraceEvent(
                step=step,
                agent="ingest",
                action="document_read",
                detail=f"{read} of {len(document.pages)} pages read, {ocr} by OCR",
                resource=resource,
                document=document.id,
            )
        )
    return events


def _normal_title(title: str) -> str:
    return " ".join(title.lower().replace(":", " ").split())


def quote_refs(
    document: SourceDocument, page: int, start: int, end: int, quote: str
) -> list[SourceRef]:
    """The span ``[start:end]`` of a page quoted from each resource that presents the document."""
    span = {"document": document.id, "page": page, "start": start, "end": end, "quote": quote}
    return [SourceRef(**(source.model_dump() | span)) for source in document.sources]


def _fact_for(document: SourceDocument, page: int, section: str, span: Span) -> Fact | None:
    key = _normal_title(section)
    attributes: AllergyAttributes | EncounterAttributes | NarrativeAttributes
    if key in _COURSE_SECTIONS:
        attributes = NarrativeAttributes(category="course", text=span.text, section=section)
    elif key in _FOLLOW_UP_SECTIONS:
        attributes = NarrativeAttributes(category="follow_up", text=span.text, section=section)
    elif key in _CONDITION_SECTIONS:
        attributes = NarrativeAttributes(
            category="condition_statement", text=span.text, section=section
        )
    elif key in _SOCIAL_SECTIONS:
        attributes = NarrativeAttributes(
            category="social_statement", text=span.text, section=section
        )
    elif key in MEDICATION_SECTIONS or key in PRESCRIPTION_SECTIONS:
        attributes = NarrativeAttributes(
            category="medication_list",
            text=span.text,
            section=section,
            list_kind="home" if key in MEDICATION_SECTIONS else "prescribed",
        )
    elif key in _COMPLAINT_SECTIONS:
        attributes = EncounterAttributes(kind="chief_complaint", text=span.text)
    elif key in _ALLERGY_SECTIONS and _NO_KNOWN_ALLERGIES.search(span.text):
        attributes = AllergyAttributes(substance=span.text, no_known_allergies=True)
    else:
        return None
    return Fact(
        id=stable_id("note", document.id, page, span.start, span.end),
        category=attributes.category,
        attributes=attributes,
        sources=quote_refs(document, page, span.start, span.end, span.text),
    )


def facts_from_document(document: SourceDocument) -> list[Fact]:
    """Verbatim statements from the sections of a note that a discharge summary draws on."""
    facts = []
    for page in document.pages:
        if not page.has_text:
            continue
        for section in split_sections(page.text):
            for span in sentences_in(page.text, section):
                fact = _fact_for(document, page.number, section.title, span)
                if fact is not None:
                    facts.append(fact)
    return facts


def chief_complaints(document: SourceDocument) -> list[str]:
    """The lines of a note's chief complaint sections, as ``facts_from_document`` reads them."""
    return [
        span.text.strip()
        for page in document.pages
        if page.has_text
        for section in split_sections(page.text)
        if _normal_title(section.title) in _COMPLAINT_SECTIONS
        for span in sentences_in(page.text, section)
    ]
