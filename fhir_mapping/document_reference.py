"""The draft as a DocumentReference, for EHRs that take clinical notes but no Composition."""

from __future__ import annotations

import base64
import html
import re
from datetime import datetime

from fhir.resources.R4B.attachment import Attachment
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.coding import Coding
from fhir.resources.R4B.documentreference import (
    DocumentReference,
    DocumentReferenceContent,
    DocumentReferenceContext,
)
from fhir.resources.R4B.identifier import Identifier
from fhir.resources.R4B.meta import Meta
from fhir.resources.R4B.reference import Reference

from fhir_mapping.composition import AI_ASSERTED
from fhir_mapping.json_values import JsonObject, objects_at, string_at, strings_at

DRAFT_FIRST_LINE = (
    "AI DRAFT - NOT REVIEWED: discharge summary drafted by Provenote, needs physician review"
)
SIGNED_FIRST_LINE = "Discharge summary drafted by Provenote (AI), reviewed and signed by {signer}"


_CLINICAL_NOTE = Coding(
    system="http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category",
    code="clinical-note",
    display="Clinical Note",
)


def draft_document_reference(
    *,
    text: str,
    patient: str,
    encounter: str | None,
    identifier: Identifier,
    doc_status: str,
    date: datetime,
    signed_by: str | None = None,
) -> DocumentReference:
    """A DocumentReference (LOINC 18842-5, clinical-note) whose text first says what it is:
    an unreviewed draft, or (``signed_by`` a practitioner) a note that physician signed."""
    if signed_by is not None and doc_status != "final":
        raise ValueError("a signed note is final")
    first_line = SIGNED_FIRST_LINE.format(signer=signed_by) if signed_by else DRAFT_FIRST_LINE
    body = f"{first_line}\n\n{text}"
    attachment = Attachment(
        contentType="text/plain; charset=utf-8",
        data=base64.b64encode(body.encode("utf-8")),
        title="Discharge summary (signed)" if signed_by else "Discharge summary (AI draft)",
    )
    return DocumentReference(
        meta=Meta(security=[AI_ASSERTED.model_copy()]),
        identifier=[identifier],
        status="current",
        docStatus=doc_status,
        type=CodeableConcept(
            coding=[Coding(system="http://loinc.org", code="18842-5", display="Discharge summary")]
        ),
        category=[CodeableConcept(coding=[_CLINICAL_NOTE.model_copy()])],
        subject=Reference(reference=patient),
        date=date,
        description=first_line,
        content=[DocumentReferenceContent(attachment=attachment)],
        authenticator=Reference(reference=signed_by) if signed_by else None,
        context=DocumentReferenceContext(encounter=[Reference(reference=encounter)])
        if encounter
        else None,
    )


def ehr_note_text(resource: JsonObject) -> str:
    """A note as the EHR holds it (its JSON, read back), as plain text: a DocumentReference's
    text attachments, or a Composition's sections (their narrative without its markup)."""
    if resource.get("resourceType") == "DocumentReference":
        return "\n\n".join(
            base64.b64decode(data).decode("utf-8", "replace")
            for data in strings_at(resource, "content", "attachment", "data")
        )
    parts = strings_at(resource, "title")
    for section in objects_at(resource, "section"):
        body = html.unescape(re.sub(r"<[^>]+>", " ", string_at(section, "text", "div") or ""))
        title = string_at(section, "title") or ""
        parts.append(f"{title}\n{' '.join(body.split())}".strip())
    return "\n\n".join(part for part in parts if part)
