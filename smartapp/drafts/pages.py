"""What the review page shows beside the sentences: each citation opened at its source, and the
patient banner."""

from __future__ import annotations

from typing import Any

from pipeline.evidence import EvidenceState, PatientInfoAttributes, SourceDocument, SourceRef
from pipeline.summary import Summary, cited_sources

PARTIAL_HEADER = "x-requested-with"


def citations(summary: Summary, state: EvidenceState) -> dict[str, list[dict[str, Any]]]:
    """Per sentence id, what each citation opens to: the quote with its document, page and
    date, or the resource and element."""
    documents = {document.id: document for document in state.documents}
    return {
        sentence.id: [
            citation(ref, documents.get(ref.document or ""))
            for ref in cited_sources(sentence, state)
        ]
        for sentence in summary.sentences()
    }


def citation(ref: SourceRef, document: SourceDocument | None) -> dict[str, Any]:
    return {
        "resource": ref.resource,
        "path": ref.path,
        "quote": ref.quote,
        "page": ref.page,
        "start": ref.start,
        "end": ref.end,
        "title": document.title if document else None,
        "date": document.date.date().isoformat() if document and document.date else None,
    }


def patient_banner(state: EvidenceState) -> PatientInfoAttributes | None:
    for fact in state.facts.get("patient_info", []):
        if isinstance(fact.attributes, PatientInfoAttributes):
            return fact.attributes
    return None
