"""A patient's whole record as a plain chart a reviewer can read, with nothing of Provenote in it.

The blind reading of drafts (``bench/reviews/``) needs the record beside the draft, written the way
an EHR's chart view shows it and never through Provenote's own mapping: the reader must judge the
draft against the record, not against what the mapping already believed. Every resource is one
line (kind, dates, status, code text, value, dosage), grouped by encounter in time order, with
each note's full text decoded; billing resources (Claim, ExplanationOfBenefit) are left out.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

SKIPPED = frozenset({"Claim", "ExplanationOfBenefit", "Provenance", "DiagnosticReport"})


def _text(concept: Any) -> str:
    if not isinstance(concept, dict):
        return ""
    codings = concept.get("coding") or [{}]
    coding = codings[0]
    label = concept.get("text") or coding.get("display") or ""
    code = coding.get("code")
    return f"{label} [{code}]" if code else str(label)


def _when(resource: dict[str, Any]) -> str:
    for key in ("effectiveDateTime", "performedDateTime", "authoredOn", "onsetDateTime", "date"):
        if resource.get(key):
            return str(resource[key])
    for key in ("period", "performedPeriod", "effectivePeriod", "occurrencePeriod", "context"):
        period = resource.get(key) or {}
        if key == "context":
            period = period.get("period") or {}
        if period.get("start"):
            return f"{period['start']} → {period.get('end', '')}"
    # A Device's record date is its manufacture date (what a draft dates home equipment by).
    return str(
        resource.get("recordedDate")
        or resource.get("occurrenceDateTime")
        or resource.get("manufactureDate")
        or ""
    )


def _value(resource: dict[str, Any]) -> str:
    if "valueQuantity" in resource:
        quantity = resource["valueQuantity"]
        return f"{quantity.get('value')} {quantity.get('unit', '')}".strip()
    if "valueCodeableConcept" in resource:
        return _text(resource["valueCodeableConcept"])
    parts = [
        f"{_text(c.get('code'))}={_value(c)}" for c in resource.get("component", []) if _value(c)
    ]
    return "; ".join(parts)


def _dosage(resource: dict[str, Any]) -> str:
    dosages = resource.get("dosageInstruction") or []
    if not dosages:
        return "no dosage"
    dosage = dosages[0]
    timing = (dosage.get("timing") or {}).get("repeat") or {}
    dose = ((dosage.get("doseAndRate") or [{}])[0].get("doseQuantity") or {}).get("value")
    needed = "as needed" if dosage.get("asNeededBoolean") else ""
    return (
        f"dose {dose}, {timing.get('frequency', '?')}/{timing.get('period', '?')}"
        f"{timing.get('periodUnit', '')} {needed}".strip()
    )


def _line(resource: dict[str, Any], medications: dict[str, str]) -> str:
    kind = resource["resourceType"]
    status = resource.get("status") or _text(resource.get("clinicalStatus"))
    head = f"- {kind} {_when(resource)} ({status})"
    if kind == "MedicationRequest":
        name = _text(resource.get("medicationCodeableConcept")) or medications.get(
            str((resource.get("medicationReference") or {}).get("reference", "")), "medication"
        )
        return f"{head}: {name}; intent {resource.get('intent')}; {_dosage(resource)}"
    if kind == "Condition":
        abated = resource.get("abatementDateTime")
        return f"{head}: {_text(resource.get('code'))}" + (f"; abated {abated}" if abated else "")
    if kind == "Observation":
        return f"{head}: {_text(resource.get('code'))} = {_value(resource)}"
    if kind == "Encounter":
        reasons = ", ".join(_text(r) for r in resource.get("reasonCode", []))
        klass = (resource.get("class") or {}).get("code")
        types = ", ".join(_text(t) for t in resource.get("type", []))
        disposition = _text((resource.get("hospitalization") or {}).get("dischargeDisposition"))
        # Where it took place: a hospital's skilled nursing unit ("… DP SNF") is named only here.
        places = ", ".join(
            str((place.get("location") or {}).get("display") or "")
            for place in resource.get("location", [])
        )
        # Who was responsible: readers could not check the draft's attending against a chart
        # that left the encounter's participants out.
        people = ", ".join(
            str((person.get("individual") or {}).get("display") or "")
            for person in resource.get("participant", [])
        )
        return (
            f"{head}: class {klass}; {types}; reason: {reasons or 'none'}"
            + (f"; discharge disposition: {disposition}" if disposition else "")
            + (f"; location: {places}" if places.strip(", ") else "")
            + (f"; participants: {people}" if people.strip(", ") else "")
        )
    if kind == "Device":
        return f"{head}: {_text(resource.get('type'))}"
    if kind == "CarePlan":
        activities = "; ".join(
            _text((a.get("detail") or {}).get("code")) for a in resource.get("activity", [])
        )
        categories = ", ".join(_text(c) for c in resource.get("category", []))
        return f"{head}: {categories}; activities: {activities}"
    if kind in ("Procedure", "Immunization", "ImagingStudy", "SupplyDelivery"):
        code = (
            resource.get("code")
            or resource.get("vaccineCode")
            or (resource.get("suppliedItem") or {}).get("itemCodeableConcept")
            or (resource.get("procedureCode") or [None])[0]
        )
        reasons = ", ".join(_text(r) for r in resource.get("reasonCode", []))
        return f"{head}: {_text(code)}" + (f"; reason: {reasons}" if reasons else "")
    if kind == "AllergyIntolerance":
        return f"{head}: {_text(resource.get('code'))}; criticality {resource.get('criticality')}"
    return f"{head}: {_text(resource.get('code') or resource.get('type'))}"


def _note(resource: dict[str, Any]) -> str:
    texts = []
    for content in resource.get("content", []):
        data = (content.get("attachment") or {}).get("data")
        if data:
            texts.append(base64.b64decode(data).decode("utf-8", "replace"))
    body = "\n".join(texts).strip()
    return f"- Note {_when(resource)}:\n\n```\n{body}\n```"


def _encounter_of(resource: dict[str, Any]) -> str:
    reference = (resource.get("encounter") or resource.get("context") or {}).get("reference")
    if reference is None and resource.get("resourceType") == "DocumentReference":
        reference = ((resource.get("context") or {}).get("encounter") or [{}])[0].get("reference")
    return str(reference or "").removeprefix("urn:uuid:").removeprefix("Encounter/")


def chart(resources: Iterable[dict[str, Any]], detail_since: str = "") -> str:
    """The record as markdown: the patient, then each encounter with what was recorded in it.
    Encounters that began before ``detail_since`` (an ISO date) keep their conditions, orders,
    procedures and devices but not their notes (the last one excepted) and observations, which
    a reader of the stay rarely needs and which would bury it."""
    items = [r for r in resources if r.get("resourceType") not in SKIPPED]
    medications = {
        f"urn:uuid:{r['id']}": _text(r.get("code"))
        for r in items
        if r["resourceType"] == "Medication"
    }
    by_encounter: dict[str, list[dict[str, Any]]] = defaultdict(list)
    lines = ["# Chart"]
    for resource in items:
        if resource["resourceType"] == "Patient":
            name = (resource.get("name") or [{}])[0]
            lines.append(
                f"Patient: {' '.join(name.get('given', []))} {name.get('family', '')}, born "
                f"{resource.get('birthDate')}, {resource.get('gender')}"
            )
        elif resource["resourceType"] not in ("Encounter", "Medication"):
            by_encounter[_encounter_of(resource)].append(resource)
    encounters = sorted(
        (r for r in items if r["resourceType"] == "Encounter"), key=lambda r: _when(r)
    )
    # The last note before the detailed years stays: a draft compares the stay's chief
    # complaint with it, and a reader must be able to check that.
    kept = max(
        (
            r
            for e in encounters
            if _when(e) < detail_since
            for r in by_encounter.get(e["id"], [])
            if r["resourceType"] == "DocumentReference"
        ),
        key=_when,
        default=None,
    )
    for encounter in encounters:
        lines.append(f"\n## Encounter {_line(encounter, medications)[2:]}")
        old = _when(encounter) < detail_since
        for resource in sorted(by_encounter.pop(encounter["id"], []), key=_when):
            kind = resource["resourceType"]
            if old and kind in ("DocumentReference", "Observation") and resource is not kept:
                continue
            lines.append(
                _note(resource) if kind == "DocumentReference" else _line(resource, medications)
            )
    lines.append("\n## Not tied to an encounter")
    lines += [_line(r, medications) for rs in by_encounter.values() for r in sorted(rs, key=_when)]
    return "\n".join(lines) + "\n"
