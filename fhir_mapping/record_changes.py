"""Whether a patient's record changed since a moment, asked in one request: a FHIR ``batch`` of
count-only searches (``_summary=count``), one per type the pull reads and the Patient itself, each
limited to what was updated after the moment (``_lastUpdated=gt``).

A relaunch asks this instead of pulling the stay again: it costs the EHR one request (an EHR that
takes no batch from an app is asked the same searches one by one, still counts only), and any
count above zero says the record changed since the draft was made. It reads the whole patient,
not only the stay, so a change elsewhere in the chart also offers "Draft again" first (the safe
side), and a deletion is not seen (FHIR searches return what exists).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fhir_mapping.json_values import objects_at, string_at
from fhir_mapping.resources import RECORD_TYPES


def change_searches(patient: str, since: datetime) -> list[tuple[str, dict[str, str]]]:
    """The searches, as (type, parameters), that find what changed after ``since``."""
    moment = f"gt{since.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"
    return [("Patient", {"_id": patient, "_lastUpdated": moment})] + [
        (kind, {"patient": f"Patient/{patient}", "_lastUpdated": moment}) for kind in RECORD_TYPES
    ]


def changes_batch(patient: str, since: datetime) -> dict[str, Any]:
    """The batch Bundle whose answers count what changed after ``since``."""
    return {
        "resourceType": "Bundle",
        "type": "batch",
        "entry": [
            {"request": {"method": "GET", "url": f"{kind}?{urlencode(params)}&_summary=count"}}
            for kind, params in change_searches(patient, since)
        ],
    }


def changed_count(answer: object, asked: int) -> int | None:
    """How many resources the batch's answers count, or None when the answer does not say (not a
    batch-response, an entry refused or without a total): then nothing is known."""
    if not isinstance(answer, dict) or answer.get("type") != "batch-response":
        return None
    entries = objects_at(answer, "entry")
    if len(entries) != asked:
        return None
    total = 0
    for entry in entries:
        status = string_at(entry, "response", "status") or ""
        found = [t for r in objects_at(entry, "resource") if isinstance(t := r.get("total"), int)]
        if not status.startswith("200") or not found:
            return None
        total += found[0]
    return total
