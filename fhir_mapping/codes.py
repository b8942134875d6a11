"""Small readers of FHIR datatypes shared by the mappers: concepts, codings, dates, quantities."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.quantity import Quantity
from fhir.resources.R4B.reference import Reference

from pipeline.evidence.model import Coding

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
LOINC = "http://loinc.org"
SNOMED = "http://snomed.info/sct"


def concept_text(concept: CodeableConcept | None) -> str | None:
    """What a person would read for a CodeableConcept: its text, else a coding's display or code."""
    if concept is None:
        return None
    if concept.text:
        return str(concept.text)
    for coding in concept.coding or []:
        if coding.display:
            return str(coding.display)
    for coding in concept.coding or []:
        if coding.code:
            return str(coding.code)
    return None


def first_coding(concept: CodeableConcept | None, system: str | None = None) -> Coding | None:
    if concept is None:
        return None
    for coding in concept.coding or []:
        if system is None or coding.system == system:
            return Coding(system=coding.system, code=coding.code, display=coding.display)
    return None


def code_of(concept: CodeableConcept | None) -> str | None:
    """The first code of a status-style CodeableConcept (``clinicalStatus``)."""
    coding = first_coding(concept)
    return coding.code if coding is not None else None


def as_datetime(value: date | str | None) -> datetime | None:
    """FHIR date or dateTime as an aware datetime; a bare date is taken at 00:00 UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return None


def quantity_text(quantity: Quantity | None) -> str | None:
    """``{value: 10, unit: "mg"}`` → "10 mg", as written by the source."""
    if quantity is None or quantity.value is None:
        return None
    unit = quantity.unit or quantity.code or ""
    return f"{plain_decimal(quantity.value)} {unit}".strip()


def plain_decimal(value: Decimal | float | int) -> str:
    text = format(Decimal(str(value)), "f")
    return text


def reference_of(reference: Reference | None) -> str | None:
    return reference.reference if reference is not None else None
