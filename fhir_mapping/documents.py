"""DocumentReference attachments and DiagnosticReport.presentedForm to documents to read.

The same note is often presented twice (Synthea stores every note as a DocumentReference and as a
DiagnosticReport with byte-identical data): attachments with the same bytes in one stay become one
document that cites both resources. An attachment given by ``url`` is taken from a Binary in the
input; one that cannot be had still becomes a document, carrying the error. Reading the bytes
(text, PDF, OCR) is the pipeline's (``pipeline.build``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from urllib.parse import urlsplit

from fhir.resources.R4B.attachment import Attachment
from fhir.resources.R4B.binary import Binary
from fhir.resources.R4B.device import Device
from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from fhir.resources.R4B.documentreference import DocumentReference

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.composition import DRAFT_KEY_SYSTEM
from fhir_mapping.json_values import JsonObject, objects_at, string_at
from fhir_mapping.mapped import Mapped, ref
from fhir_mapping.resources import ParsedResource, relative_key
from fhir_mapping.scope import Scope
from pipeline.evidence.mapped import PendingDocument
from pipeline.evidence.model import aware, stable_id
from pipeline.ingestion.documents import document_id

OUTSIDE_EHR = "attachment outside the EHR, not fetched"
AI_GENERATED = "AI-generated draft"
AI_ASSERTED_CODE = "AIAST"
# What carries notes as attachments: a note, or a report's presented form.
Document = DocumentReference | DiagnosticReport


def _attachment_bytes(
    attachment: Attachment, path: str, item: ParsedResource[Document], scope: Scope
) -> tuple[bytes, str | None, str | None]:
    """(data, content type, error) of one attachment, following ``url`` to a Binary."""
    if path in item.attachment_errors:
        return b"", attachment.contentType, item.attachment_errors[path]
    if attachment.data is not None:
        return attachment.data, attachment.contentType, None
    if attachment.url:
        url = str(attachment.url)
        if url in scope.index.not_fetched:
            why = scope.index.not_fetched[url]
            return b"", attachment.contentType, OUTSIDE_EHR if "outside" in why else why
        binary = scope.index.resolve(url, Binary)
        if binary is None:
            return (
                b"",
                attachment.contentType,
                f"{_attachment_place(url)} is not in the input",
            )
        return binary.data or b"", attachment.contentType or binary.contentType, None
    return b"", attachment.contentType, "attachment has neither data nor url"


def _attachment_place(url: str) -> str:
    """Where an attachment was said to be, for a Needs review line: the host alone, never the
    URL (it may carry a signature or a token, and the line must not become a link)."""
    host = urlsplit(url).hostname
    return f"the attachment on host {host}" if host else "the attachment's Binary"


def _collect(
    found: dict[str, PendingDocument],
    scope: Scope,
    item: ParsedResource[Document],
    attachment: Attachment,
    path: str,
    title: str | None,
    date: datetime | None,
) -> None:
    data, content_type, error = _attachment_bytes(attachment, path, item, scope)
    encounter = scope.encounter.key
    key = document_id(data, encounter) if data else stable_id("doc", item.key, path)
    entry = found.setdefault(
        key, PendingDocument(key, data, content_type, attachment.title or title, date)
    )
    entry.sources.append(ref(item, path))
    if error:
        entry.errors.append(error)


def _document_reference_in_stay(scope: Scope, document: DocumentReference) -> bool:
    """A note of one of the episode's encounters (or, naming none, written during the episode),
    and not written after discharge."""
    context = document.context
    encounters = context.encounter or [] if context is not None else []
    period_start = context.period.start if context and context.period else None
    if scope.after_discharge(as_datetime(document.date)):
        return False
    if encounters:
        return any(scope.is_encounter(encounter) for encounter in encounters)
    return scope.during_stay(as_datetime(period_start or document.date))


def ai_generated(document: Document, scope: Scope, item: ParsedResource[Document]) -> bool:
    """Whether a document is an AI-generated draft (HL7 AI Transparency's AIAST label,
    Provenote's own identifier, or a Device as author): such a note is never evidence, or a new
    draft would cite an earlier draft, its own words, as the record."""
    meta = document.meta
    if meta is not None and any(label.code == AI_ASSERTED_CODE for label in meta.security or []):
        return True
    if any(identifier.system == DRAFT_KEY_SYSTEM for identifier in document.identifier or []):
        return True
    for author in getattr(document, "author", None) or []:
        reference = author.reference or ""
        if reference.startswith("#"):
            if scope.index.resolve(reference, Device, container=item) is not None:
                return True
        elif relative_key(reference).startswith("Device/"):
            return True
    return False


def collect_documents(scope: Scope) -> tuple[list[PendingDocument], Mapped]:
    """The stay's documents to read (notes and reports' presented forms, the same bytes once),
    and the notes excluded with why."""
    mapped = Mapped()
    found: dict[str, PendingDocument] = {}
    for item in scope.of_patient(DocumentReference):
        document = item.model
        if document.status == "entered-in-error":
            mapped.exclude(item, "status", "status is entered-in-error")
            continue
        if ai_generated(document, scope, item):
            mapped.exclude(item, "ai_generated", AI_GENERATED)
            continue
        if not _document_reference_in_stay(scope, document):
            mapped.exclude(item, "out_of_scope", "note not of this stay")
            continue
        title = document.description or concept_text(document.type)
        for position, content in enumerate(document.content or []):
            _collect(
                found,
                scope,
                item,
                content.attachment,
                f"content[{position}].attachment",
                title,
                as_datetime(document.date),
            )
    for report_item in scope.index.of_type(DiagnosticReport):
        report = report_item.model
        if not report.presentedForm or not scope.is_patient(report.subject):
            continue
        effective = report.effectiveDateTime or (
            report.effectivePeriod.start if report.effectivePeriod else None
        )
        in_stay = scope.in_stay(report.encounter, effective or report.issued)
        if not in_stay or report.status in {"cancelled", "entered-in-error"}:
            continue
        if ai_generated(report, scope, report_item):
            mapped.exclude(report_item, "ai_generated", AI_GENERATED)
            continue
        for position, attachment in enumerate(report.presentedForm):
            _collect(
                found,
                scope,
                report_item,
                attachment,
                f"presentedForm[{position}]",
                concept_text(report.code),
                as_datetime(effective or report.issued),
            )
    return list(found.values()), mapped


def _element(resource: JsonObject, path: str) -> object:
    """The element at a path such as ``content[0].attachment`` (None when absent)."""
    found: object = resource
    for step in path.split("."):
        name, _, index = step.partition("[")
        found = found.get(name) if isinstance(found, Mapping) else None
        if index:
            position = int(index.rstrip("]"))
            found = found[position] if isinstance(found, list) and position < len(found) else None
    return found


def attachment_in_record(
    record: JsonObject, resource: str, path: str
) -> tuple[bytes, str | None] | None:
    """The bytes and content type of one attachment of a pulled record (a Bundle, as stored),
    inline or in a Binary of the same record: what the review page shows as the page a quote is
    on. None when the record does not hold it."""
    by_key = {
        f"{found.get('resourceType')}/{found['id']}": found
        for found in objects_at(record, "entry", "resource")
        if "id" in found
    }
    attachment = _element(by_key.get(resource, {}), path)
    if not isinstance(attachment, Mapping):
        return None
    content_type = string_at(attachment, "contentType")
    if data := string_at(attachment, "data"):
        return base64.b64decode(data), content_type
    binary = by_key.get(relative_key(string_at(attachment, "url") or ""))
    if binary is None or not (data := string_at(binary, "data")):
        return None
    return base64.b64decode(data), content_type or string_at(binary, "contentType")


def earlier_note(scope: Scope) -> PendingDocument | None:
    """The patient's latest note written before the episode began, of none of its encounters:
    read only to tell a chief complaint that templated notes carry forward from visit to visit
    from what brought the patient to this stay (``pipeline.summarizing.sections.stay``); never
    evidence. Its first attachment; None when the record read holds no such note."""
    candidates = []
    for item in scope.index.of_type(DocumentReference):
        document = item.model
        written = as_datetime(document.date)
        if (
            scope.is_patient(document.subject)
            and document.status != "entered-in-error"
            and document.content
            and scope.before_episode(written)
            and not _document_reference_in_stay(scope, document)
            and not ai_generated(document, scope, item)
        ):
            candidates.append((aware(written), item))
    if not candidates:
        return None
    written, item = max(candidates, key=lambda candidate: candidate[0])
    found: dict[str, PendingDocument] = {}
    attachment = item.model.content[0].attachment
    title = item.model.description or concept_text(item.model.type)
    _collect(found, scope, item, attachment, "content[0].attachment", title, written)
    return next(iter(found.values()))
