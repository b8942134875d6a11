"""Text that leaves Provenote without the patient in it: de-identified by what the text is, not
by which field holds it (a note sentence can hold an address as easily as the address field).

For one patient, a ``Deidentifier`` replaces, in any text or JSON value:

- what the record says the patient and their relatives are: every name and name part, the
  identifiers (record number, SSN, licences), phone numbers, e-mail addresses and addresses of the
  Patient and of each RelatedPerson and Patient.contact, and the date of birth in any spelling;
- what looks like one, whoever it belongs to: e-mail addresses, phone and fax numbers, social
  security numbers, URLs, street addresses and ZIP codes, a relative or a "Mr./Mrs./Ms." named
  in a sentence, ages over 89;
- every resource id and UUID, by a keyed pseudonym (the same id, the same pseudonym, so edits can
  still be grouped by draft, stay or resource);
- every other date, shifted by a number of days of the patient's own (keyed, 30 to 365 days
  back), in the spelling it had, so intervals within a stay survive.

docs/operations.md lists the HIPAA Safe Harbor identifiers and how each is handled.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from fhir_mapping.json_values import JsonObject, objects_at, string_at, strings_at
from pipeline.evidence.model import EvidenceState

MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_MONTH = "|".join(f"{name[:3]}(?:{name[3:]})?" for name in MONTHS)
RELATIVES = (
    "wife|husband|spouse|partner|son|daughter|mother|father|mom|dad|sister|brother|"
    "grandson|granddaughter|grandmother|grandfather|niece|nephew|aunt|uncle|cousin|"
    "friend|neighbor|neighbour|caregiver|guardian"
)
_NAME = r"[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+)?"
# Patterns of what identifies a person, whoever's it is, with what each becomes.
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"), "[email]"),
    (re.compile(r"\bhttps?://\S+"), "[url]"),
    (re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), "[identifier]"),
    (re.compile(r"(?<!\w)(?:\+?1[ .-]?)?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b"), "[phone]"),
    (
        re.compile(
            r"\b\d{1,6}\s+(?:[A-Z][A-Za-z]+\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Drive|Dr|"
            r"Lane|Ln|Boulevard|Blvd|Court|Ct|Way|Place|Pl|Terrace|Estate|Circle|Parkway)\b\.?"
            r"(?:,?\s+(?:Unit|Apt|Suite|#)\s*\w+)?"
        ),
        "[address]",
    ),
    # "City, ST 12345": the city with the state and ZIP code.
    (
        re.compile(r"\b(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s+[A-Z]{2},?\s+\d{5}(?:-\d{4})?\b"),
        "[address]",
    ),
    (re.compile(r"\b[A-Z]{2},?\s+\d{5}(?:-\d{4})?\b"), "[address]"),
    (re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx)\.?\s+" + _NAME), "[name]"),
]
_RELATIVE_NAMED = re.compile(rf"\b({RELATIVES})(,?\s+(?:named\s+)?)({_NAME})\b", re.IGNORECASE)
_OLD_AGE = re.compile(r"\b(9\d|1[0-2]\d)(?=[- ](?:year|yr)s?[- ]old\b|\s*(?:yo|y/o)\b)")
# A FHIR reference "Type/id" (an id with a digit or a hyphen: "Yes/No" and "mg/dL" are no ids).
_REFERENCE = re.compile(
    r"\b([A-Z][a-z]+(?:[A-Z][a-z]+)*)/((?=[A-Za-z0-9.]*[0-9-])[A-Za-z0-9.-]{3,64})\b"
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?=T|\b)")
_US = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_SPELLED = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE)
_SPELLED_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)


def _month(name: str) -> int:
    return next(
        i for i, month in enumerate(MONTHS, 1) if month.lower().startswith(name[:3].lower())
    )


def date_spellings(day: date) -> list[str]:
    """How a date is written in notes: ISO, US numeric, spelled out either way round."""
    month = MONTHS[day.month - 1]
    return [
        day.isoformat(),
        f"{day.month:02d}/{day.day:02d}/{day.year}",
        f"{day.month}/{day.day}/{day.year}",
        f"{month} {day.day}, {day.year}",
        f"{month[:3]} {day.day}, {day.year}",
        f"{day.day} {month} {day.year}",
    ]


class Deidentifier:
    """One patient's de-identification: ``known`` literal text → its placeholder."""

    def __init__(self, secret: bytes, patient: str, known: dict[str, str], birth: date | None):
        self.secret = secret
        digest = hmac.new(secret, f"date-shift:{patient}".encode(), hashlib.sha256).digest()
        self.shift = timedelta(days=30 + int.from_bytes(digest[:4], "big") % 336)
        known = dict(known)
        if birth is not None:
            known |= {spelling: "[date of birth]" for spelling in date_spellings(birth)}
        usable = {text.strip(): mark for text, mark in known.items() if len(text.strip()) >= 2}
        self._known = sorted(usable.items(), key=lambda item: -len(item[0]))

    def pseudonym(self, identifier: str) -> str:
        return "id-" + hmac.new(self.secret, identifier.encode(), hashlib.sha256).hexdigest()[:16]

    def _shifted(self, year: str, month: int, day: str) -> date | None:
        try:
            return date(int(year), month, int(day)) - self.shift
        except ValueError:
            return None

    def _dates(self, text: str) -> str:
        def iso(found: re.Match[str]) -> str:
            moved = self._shifted(found[1], int(found[2]), found[3])
            return moved.isoformat() if moved else found[0]

        def us(found: re.Match[str]) -> str:
            moved = self._shifted(found[3], int(found[1]), found[2])
            return f"{moved.month:02d}/{moved.day:02d}/{moved.year}" if moved else found[0]

        def spelled(found: re.Match[str]) -> str:
            moved = self._shifted(found[3], _month(found[1]), found[2])
            return f"{MONTHS[moved.month - 1]} {moved.day}, {moved.year}" if moved else found[0]

        def day_first(found: re.Match[str]) -> str:
            moved = self._shifted(found[3], _month(found[2]), found[1])
            return f"{moved.day} {MONTHS[moved.month - 1]} {moved.year}" if moved else found[0]

        for pattern, rewrite in (
            (_ISO, iso),
            (_US, us),
            (_SPELLED, spelled),
            (_SPELLED_DAY_FIRST, day_first),
        ):
            text = pattern.sub(rewrite, text)
        return text

    def text(self, text: str) -> str:
        """``text`` with nothing of the patient left in it."""
        for literal, mark in self._known:
            text = re.sub(rf"(?<!\w){re.escape(literal)}(?!\w)", mark, text, flags=re.IGNORECASE)
        text = _REFERENCE.sub(lambda found: f"{found[1]}/{self.pseudonym(found[2])}", text)
        text = _UUID.sub(lambda found: self.pseudonym(found[0]), text)
        for pattern, mark in PATTERNS:
            text = pattern.sub(mark, text)
        text = _RELATIVE_NAMED.sub(lambda found: f"{found[1]}{found[2]}[name]", text)
        text = _OLD_AGE.sub("90 or older", text)
        return self._dates(text)

    def value(self, value: Any) -> Any:
        """Text, or lists and dicts of it (their keys too), de-identified."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(str(key)): self.value(item) for key, item in value.items()}
        return value


def _person(person: JsonObject, add: Callable[[str, str], None]) -> None:
    """A person's names, contact details, addresses and identifiers (Patient, RelatedPerson,
    Patient.contact); a malformed element reads as absent."""
    for name in objects_at(person, "name"):
        parts = [*strings_at(name, "given"), *strings_at(name, "family")]
        add(" ".join(parts), "[name]")
        for part in parts:
            add(part, "[name]")
    for telecom in objects_at(person, "telecom"):
        mark = "[email]" if string_at(telecom, "system") == "email" else "[phone]"
        add(string_at(telecom, "value") or "", mark)
    for address in objects_at(person, "address"):
        for field in ("line", "city", "district", "postalCode", "text"):
            for text in strings_at(address, field):
                add(text, "[address]")
    for value in strings_at(person, "identifier", "value"):
        add(value, "[identifier]")


def patient_deidentifier(
    secret: bytes, patient: str, state: EvidenceState | None, record: dict[str, Any] | None
) -> Deidentifier:
    """What is known of the patient, from the draft's evidence and (while it is kept) the pulled
    record: the Patient, its contacts, and every RelatedPerson."""
    known: dict[str, str] = {patient: "[patient id]"}
    birth: date | None = None

    def add(text: str, mark: str) -> None:
        known.setdefault(text, mark)

    for fact in state.facts.get("patient_info", []) if state is not None else []:
        attributes = fact.attributes.model_dump()
        add(str(attributes.get("name") or ""), "[name]")
        _person({"name": attributes.get("names", [])}, add)
        for identifier in [*attributes.get("identifiers", []), attributes.get("mrn") or ""]:
            add(str(identifier), "[identifier]")
        birth = attributes.get("birth_date") or birth
    for resource in objects_at(record, "entry", "resource"):
        kind = string_at(resource, "resourceType")
        if kind in {"Patient", "RelatedPerson"}:
            _person(resource, add)
            for contact in objects_at(resource, "contact"):
                _person(contact, add)
        born = string_at(resource, "birthDate")
        if kind == "Patient" and born:
            birth = birth or _iso_date(born)
    return Deidentifier(secret, patient, known, birth)


def _iso_date(text: str) -> date | None:
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        return None
