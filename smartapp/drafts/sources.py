"""What a citation is, in a physician's words, and what it opens to beside the draft.

A citation names a fact of the evidence and one of its sources. On the review page it reads as
what it is ("Admission H&P, 2011-04-25, p. 1", "Order: aspirin 81 mg daily (active)",
"Creatinine 4.65 mg/dL (H), 2023-10-01"); the raw reference stays with it for the curious. Opened,
it shows the note's page with the quote marked (on the page image too, for PDFs and scans), or
the resource laid out field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from fhir_mapping.documents import attachment_in_record
from pipeline.evidence.model import (
    AdministrationAttributes,
    AllergyAttributes,
    CarePlanAttributes,
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    ImagingAttributes,
    LabResultAttributes,
    MedicationAttributes,
    NarrativeAttributes,
    Page,
    PatientInfoAttributes,
    PendingResultAttributes,
    ProcedureAttributes,
    SourceDocument,
    SourceRef,
    WordBox,
)
from pipeline.evidence.summary import Sentence, Summary, cited_facts_and_sources
from pipeline.ingestion.attachments import shows_pages

FLAG_LETTERS = {
    "high": "H",
    "low": "L",
    "critical high": "HH",
    "critical low": "LL",
    "abnormal": "A",
}
MEDICATION_KINDS = {
    "MedicationRequest": "Order",
    "MedicationStatement": "Medication statement",
    "MedicationAdministration": "Given",
    "MedicationDispense": "Dispensed",
}


def _day(value: date | datetime | None) -> str | None:
    if value is None:
        return None
    return (value.date() if isinstance(value, datetime) else value).isoformat()


def _joined(*parts: str | None, separator: str = " ") -> str:
    return separator.join(part for part in parts if part)


@dataclass(frozen=True, slots=True)
class Citation:
    """One source of a sentence as the page shows it."""

    number: int
    label: str
    ref: SourceRef
    fact_id: str

    @property
    def raw(self) -> str:
        where = (
            f" · characters {self.ref.start}–{self.ref.end}" if self.ref.start is not None else ""
        )
        return f"{self.ref.resource} · {self.ref.path}{where}"


def document_label(document: SourceDocument | None, page: int | None) -> str:
    title = (document.title if document else None) or "Note"
    day = _day(document.date) if document else None
    return _joined(title, day, f"p. {page}" if page else None, separator=", ")


def resource_label(fact: Fact, resource: str) -> str:
    """A fact's source resource in a few words: what it is, its value and its status."""
    kind = resource.split("/", 1)[0]
    match fact.attributes:
        case MedicationAttributes() as medication:
            words = _joined(medication.name, medication.dose, medication.frequency)
            return f"{MEDICATION_KINDS.get(kind, 'Medication')}: {words} ({medication.status})"
        case LabResultAttributes() as result:
            value = result.shown_value or result.value_text
            if value is None and result.value is not None:
                value = f"{result.value:g}"
            flag = FLAG_LETTERS.get(result.flag or "")
            measured = _joined(result.name, value, result.unit, f"({flag})" if flag else None)
            return _joined(measured, _day(result.effective), separator=", ")
        case DiagnosisAttributes() as diagnosis:
            status = diagnosis.clinical_status or diagnosis.verification_status
            named = _joined(diagnosis.display, f"({status})" if status else None)
            return _joined(f"Diagnosis: {named}", _day(diagnosis.onset), separator=", ")
        case AllergyAttributes() as allergy:
            reactions = ", ".join(allergy.reactions)
            return _joined(f"Allergy: {allergy.substance}", reactions, separator="; ")
        case ProcedureAttributes() as procedure:
            done = f"Procedure: {procedure.name} ({procedure.status})"
            return _joined(done, _day(procedure.performed_start), separator=", ")
        case PendingResultAttributes() as pending:
            return f"Pending: {pending.name} ({pending.status})"
        case EncounterAttributes() as stay:
            span = _joined(_day(stay.start), _day(stay.end), separator=" to ")
            return _joined(
                f"Stay ({stay.class_code or 'class not documented'})", span, separator=", "
            )
        case PatientInfoAttributes() as patient:
            born = f"born {patient.birth_date.isoformat()}" if patient.birth_date else None
            return _joined(
                f"Patient: {patient.name or 'name not documented'}", born, separator=", "
            )
        case CarePlanAttributes() as plan:
            named = _joined(plan.title, f"({plan.status})" if plan.status else None)
            return _joined(
                f"{plan.kind.replace('_', ' ').capitalize()}: {named}",
                _day(plan.when),
                separator=", ",
            )
        case AdministrationAttributes() as given:
            return _joined(f"Given: {given.name}", _day(given.when), separator=", ")
        case ImagingAttributes() as imaging:
            return _joined(f"Imaging: {imaging.name}", _day(imaging.started), separator=", ")
        case NarrativeAttributes() as narrative:
            return f"{narrative.section or 'Note'}: {narrative.text[:60]}"
    return resource


def resource_rows(fact: Fact) -> list[tuple[str, str]]:
    """The resource laid out for reading: each documented field with its value, in the order a
    clinician reads an order or a result (drug, dose, timing, status, dates, prescriber…)."""
    attributes = fact.attributes
    values: dict[str, Any]
    match attributes:
        case MedicationAttributes():
            values = {
                "Drug": attributes.name,
                "Strength": attributes.strength,
                "Dose": attributes.dose,
                "Timing": attributes.frequency,
                "Route": attributes.route,
                "As needed": attributes.as_needed_for or ("yes" if attributes.as_needed else None),
                "Instructions": attributes.dosage_text,
                "Status": attributes.status,
                "Intent": attributes.intent,
                "Ordered": _day(attributes.authored_on),
                "Prescriber": attributes.prescriber,
                "Duration": attributes.duration,
                "Reason": attributes.reason,
                "Phase of the stay": attributes.phase,
            }
        case LabResultAttributes():
            low, high = attributes.reference_low, attributes.reference_high
            reference = attributes.reference_text or (
                f"{low:g}–{high:g}" if low is not None and high is not None else None
            )
            values = {
                "Test": attributes.name,
                "Value": attributes.shown_value
                or attributes.value_text
                or (f"{attributes.value:g}" if attributes.value is not None else None),
                "Unit": attributes.unit,
                "Reference range": reference,
                "Range from": attributes.range_source,
                "Interpretation": attributes.interpretation or attributes.flag,
                "Time": attributes.effective.isoformat() if attributes.effective else None,
            }
        case _:
            values = {
                name.replace("_", " ").capitalize(): value
                for name, value in attributes.model_dump(mode="json").items()
                if name != "category"
            }
    return [(name, _shown(value)) for name, value in values.items() if value not in (None, "", [])]


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_shown(item)}" for key, item in value.items() if item)
    return str(value)


def sentence_citations(sentence: Sentence, state: EvidenceState) -> list[Citation]:
    """The distinct sources behind a sentence, in citation order, each with its label."""
    documents = {document.id: document for document in state.documents}
    return [
        Citation(
            number,
            document_label(documents.get(ref.document), ref.page)
            if ref.document
            else resource_label(fact, ref.resource),
            ref,
            fact.id,
        )
        for number, (fact, ref) in enumerate(cited_facts_and_sources(sentence, state), start=1)
    ]


def citations(summary: Summary, state: EvidenceState) -> dict[str, list[Citation]]:
    return {sentence.id: sentence_citations(sentence, state) for sentence in summary.sentences()}


@dataclass(frozen=True, slots=True)
class Highlight:
    """The page text around a quote: before, the quote, after (escaped when rendered)."""

    before: str
    quote: str
    after: str


@dataclass(slots=True)
class SourceView:
    """What the source pane shows for one citation."""

    citation: Citation
    document: SourceDocument | None = None
    page: Page | None = None
    page_count: int = 0
    text: Highlight | None = None
    image_url: str | None = None
    boxes: list[WordBox] = field(default_factory=list)
    scanned: bool = False
    rows: list[tuple[str, str]] = field(default_factory=list)


def ocr_boxes(words: list[WordBox], start: int, end: int) -> list[WordBox]:
    """The OCR words a span covers, by their characters."""
    return [word for word in words if word.start < end and word.end > start]


def source_view(citation: Citation, state: EvidenceState, draft_id: str) -> SourceView:
    """The source pane for one citation: the page with the quote, or the resource's fields.
    A PDF text page's boxes are found by the caller, which holds the PDF
    (``pipeline.ingestion.pdf``)."""
    ref = citation.ref
    if not ref.document:
        return SourceView(citation, rows=resource_rows(state.fact(citation.fact_id)))
    document = state.document(ref.document)
    view = SourceView(citation, document, page_count=len(document.pages))
    page = next((p for p in document.pages if p.number == ref.page), None)
    if page is None:
        return view
    if ref.start is not None and ref.end is not None:
        view.text = Highlight(
            page.text[: ref.start], page.text[ref.start : ref.end], page.text[ref.end :]
        )
        view.boxes = ocr_boxes(page.words, ref.start, ref.end)
    view.page, view.scanned = page, page.ocr_applied
    if shows_pages(document.content_type):
        view.image_url = f"/drafts/{draft_id}/documents/{document.id}/pages/{page.number}"
    return view


def attachment_of(
    record: dict[str, Any] | None, document: SourceDocument
) -> tuple[bytes, str | None] | None:
    """A document's bytes and type, from the record its draft was made from (kept with the
    job); None when the record is gone or no longer holds them."""
    if record is None:
        return None
    for source in document.sources:
        found = attachment_in_record(record, source.resource, source.path)
        if found is not None:
            return found
    return None
