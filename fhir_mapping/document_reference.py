"""The draft as a DocumentReference, for EHRs that take clinical notes but no Composition."""

from __future__ import annotations

import base64
import html
import re
from datetime import datetime
from typing import Any

from fhir.resources.R4B.documentreference import DocumentReference

from fhir_mapping.composition import AI_ASSERTED

DRAFT_FIRST_LINE = (
    "AI DRAFT - NOT REVIEWED: discharge summary drafted by Provenote, needs physician review"
)
SIGNED_FIRST_LINE = "Discharge summary drafted by Provenote (AI), reviewed and signed by {signer}"


def draft_document_reference(
    *,
    text: str,
    patient: str,
    encounter: str | None,
    identifier: dict[str, str],
    doc_status: str,
    date: datetime,
    signed_by: str | None = None,
) -> dict[str, Any]:
    """A DocumentReference (LOINC 18842-5, clinical-note) whose text first says what it is:
    an unreviewed draft, or (``signed_by`` a practitioner) a note that physician signed."""
    if signed_by is not None and doc_status != "final":
        raise ValueError("a signed note is final")
    first_line = SIGNED_FIRST_LINE.format(signer=signed_by) if signed_by else DRAFT_FIRST_LINE
    body = f"{first_line}\n\n{text}"
    resource: dict[str, Any] = {
        "resourceType": "DocumentReference",
        "meta": {"security": [AI_ASSERTED]},
        "identifier": [identifier],
        "status": "current",
        "docStatus": doc_status,
        "type": {
            "coding": [
                {"system": "http://loinc.org", "code": "18842-5", "display": "Discharge summary"}
            ]
        },
        "category": [
            {
                "coding": [
                    {
                        "system": "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category",
                        "code": "clinical-note",
                        "display": "Clinical Note",
                    }
                ]
            }
        ],
        "subject": {"reference": patient},
        "date": date.isoformat(),
        "description": first_line,
        "content": [
            {
                "attachment": {
                    "contentType": "text/plain; charset=utf-8",
                    "data": base64.b64encode(body.encode("utf-8")).decode("ascii"),
                    "title": "Discharge summary (signed)"
                    if signed_by
                    else "Discharge summary (AI draft)",
                }
            }
        ],
    }
    if signed_by:
        resource["authenticator"] = {"reference": signed_by}
    if encounter:
        resource["context"] = {"encounter": [{"reference": encounter}]}
    DocumentReference.model_validate(resource)
    return resource


def ehr_note_text(resource: dict[str, Any]) -> str:
    """A note as the EHR holds it, as plain text: a DocumentReference's text attachments, or a
    Composition's sections (their narrative without its markup)."""
    parts: list[str] = []
    if resource.get("resourceType") == "DocumentReference":
        for content in resource.get("content") or []:
            data = (content.get("attachment") or {}).get("data")
            if isinstance(data, str):
                parts.append(base64.b64decode(data).decode("utf-8", "replace"))
        return "\n\n".join(parts)
    if isinstance(resource.get("title"), str):
        parts.append(resource["title"])
    for section in resource.get("section") or []:
        div = (section.get("text") or {}).get("div") or ""
        body = html.unescape(re.sub(r"<[^>]+>", " ", div))
        parts.append(f"{section.get('title') or ''}\n{' '.join(body.split())}".strip())
    return "\n\n".join(part for part in parts if part)
