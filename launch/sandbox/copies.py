"""Copies of sample records under new ids: more patients, or a longer history, for the sandbox.

A scale test needs many patients and a benchmark needs patients with long histories; both are
made from the shipped Synthea records by copying entries under new ids (derived from a tag, so
a copy is the same every run), with every reference among them rewritten and, for history,
every date moved whole years back.
"""

from __future__ import annotations

import copy
import re
import uuid
from typing import Any

DATE = re.compile(r"^(\d{4})(-\d{2}-\d{2}.*)?$")


def shift_years(value: str, years: int) -> str:
    """A FHIR date or dateTime ``years`` earlier (29 February becomes the 28th); other text
    as is."""
    found = DATE.match(value)
    if found is None or years == 0:
        return value
    rest = found.group(2) or ""
    if rest.startswith("-02-29"):
        rest = "-02-28" + rest[6:]
    return f"{int(found.group(1)) - years:04d}{rest}"


def _rewrite(value: Any, renames: dict[str, str], years: int) -> Any:
    if isinstance(value, dict):
        return {key: _rewrite(item, renames, years) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewrite(item, renames, years) for item in value]
    if isinstance(value, str):
        return renames.get(value) or shift_years(value, years)
    return value


def copied_entries(
    entries: list[dict[str, Any]], tag: str, years_back: int = 0
) -> list[dict[str, Any]]:
    """Bundle entries (``fullUrl`` and ``resource``) under new ids derived from ``tag``; what
    they reference among themselves is rewritten to the copies."""
    renames: dict[str, str] = {}
    for entry in entries:
        resource = entry["resource"]
        new_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tag}:{entry['fullUrl']}"))
        renames |= {
            entry["fullUrl"]: f"urn:uuid:{new_id}",
            f"{resource['resourceType']}/{resource['id']}": f"{resource['resourceType']}/{new_id}",
            resource["id"]: new_id,
        }
    return [_rewrite(copy.deepcopy(entry), renames, years_back) for entry in entries]


def patient_copy(bundle: dict[str, Any], tag: str) -> dict[str, Any]:
    """The whole record as another patient's: every id new, nothing shared with the original."""
    return bundle | {"entry": copied_entries(bundle["entry"], tag)}
