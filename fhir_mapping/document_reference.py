"""The draft as a DocumentReference, for EHRs that take clinical notes but no Composition."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from fhir.resources.R4B.documentreference import DocumentReference

from fhir_mapping.composition import AI_ASSERTED

DRAFT_FIRST_LINE = (
    "AI DRAFT - NOT REVIEWED: discharge summary drafted by Provenote, needs physician review"
)


def draft_document_reference(
    *,
    text: str,
    patient: str,
    encounter: str | None,
    identifier: dict[str, str],
    doc_status: str,
    date: datetime,
) -> dict[str, Any]:
    """A DocumentReference (LOINC 18842-5, clinical-note) whose text first says it is a draft."""
    body = f"{DRAFT_FIRST_LINE}\n\n{text}"
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
        "description": DRAFT_FIRST_LINE,
        "content": [
            {
                "attachment": {
                    "contentType": "text/plain; charset=utf-8",
                    "data": base64.b64encode(body.encode("utf-8")).decode("ascii"),
                    "title": "Discharge summary (AI draft)",
                }
            }
        ],
    }
    if encounter:
        resource["context"] = {"encounter": [{"reference": encounter}]}
    DocumentReference.model_validate(resource)
    return resource
