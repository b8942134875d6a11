"""How a stored draft is served by Provenote's own FHIR API, and as a FHIR document.

The stored draft is a transaction Bundle linked by ``urn:uuid``; served, its resources get ids:
the Composition the draft's id, each Provenance the uuid of its ``urn``, the Device one id per
software version (derived from its identifier, so every draft of that version names one Device).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fhir.resources.R4B.bundle import Bundle

from fhir_mapping.composition import CANONICAL
from fhir_mapping.references import rewrite_references

_DEVICE_NAMESPACE = uuid.UUID("0f3c2a4e-7d61-4c1f-9f2b-6a8e5d4c3b21")


@dataclass(frozen=True, slots=True)
class HostedDraft:
    composition: dict[str, Any]
    device: dict[str, Any]
    provenances: list[dict[str, Any]]


def instant(moment: datetime) -> str:
    """A FHIR instant; a naive time is UTC (SQLite returns stored UTC times without a zone)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def device_id(device: dict[str, Any]) -> str:
    identifier = device["identifier"][0]
    return str(uuid.uuid5(_DEVICE_NAMESPACE, f"{identifier['system']}|{identifier['value']}"))


def hosted_draft(
    bundle: dict[str, Any], composition_id: str, version: int, last_updated: datetime
) -> HostedDraft:
    """The draft's resources with server ids, the Composition at ``version``."""
    by_url = {entry["fullUrl"]: entry["resource"] for entry in bundle["entry"]}
    targets: dict[str, str] = {}
    for url, resource in by_url.items():
        kind = resource["resourceType"]
        if kind == "Composition":
            targets[url] = f"Composition/{composition_id}"
        elif kind == "Device":
            targets[url] = f"Device/{device_id(resource)}"
    served = {url: rewrite_references(resource, targets) for url, resource in by_url.items()}
    composition, device, provenances = None, None, []
    for url, resource in served.items():
        kind = resource["resourceType"]
        if kind == "Composition":
            meta = resource.get("meta", {}) | {
                "versionId": str(version),
                "lastUpdated": instant(last_updated),
            }
            composition = resource | {"id": composition_id, "meta": meta}
        elif kind == "Device":
            device = resource | {"id": device_id(resource)}
        elif kind == "Provenance":
            provenances.append(resource | {"id": url.removeprefix("urn:uuid:")})
    if composition is None or device is None:
        raise ValueError("a stored draft needs a Composition and a Device")
    return HostedDraft(composition, device, provenances)


def _reference_targets(value: Any) -> set[str]:
    if isinstance(value, list):
        return set().union(*(_reference_targets(item) for item in value)) if value else set()
    if isinstance(value, dict):
        found = set().union(*(_reference_targets(item) for item in value.values()))
        reference = value.get("reference")
        return found | {reference} if isinstance(reference, str) else found
    return set()


def document_bundle(
    hosted: HostedDraft,
    record: dict[str, Any],
    *,
    api_base: str,
    ehr_base: str,
    timestamp: datetime,
) -> dict[str, Any]:
    """A FHIR document: the Composition first, then every resource it references that we hold.

    Resources from the EHR keep their home: their ``fullUrl`` is on ``ehr_base`` and the
    Composition's references to them are made absolute, so the document resolves on its own.
    """
    composition = hosted.composition
    held = {
        f"{entry['resource']['resourceType']}/{entry['resource'].get('id')}": entry["resource"]
        for entry in record.get("entry", [])
    }
    wanted = sorted(_reference_targets(composition) & held.keys())
    ehr = ehr_base.rstrip("/")
    absolute = {reference: f"{ehr}/{reference}" for reference in wanted}
    api = api_base.rstrip("/")
    entries = [
        {
            "fullUrl": f"{api}/Composition/{composition['id']}",
            "resource": rewrite_references(composition, absolute),
        },
        {"fullUrl": f"{api}/Device/{hosted.device['id']}", "resource": hosted.device},
        *({"fullUrl": absolute[reference], "resource": held[reference]} for reference in wanted),
    ]
    document = {
        "resourceType": "Bundle",
        "identifier": {
            "system": f"{CANONICAL}/document",
            "value": f"{composition['id']}-{composition['meta']['versionId']}",
        },
        "type": "document",
        "timestamp": instant(timestamp),
        "entry": entries,
    }
    Bundle.model_validate(document)
    return document


def served_device(bundle: dict[str, Any], served_id: str) -> dict[str, Any] | None:
    """The draft's Device as served under ``served_id``, if that is its id."""
    for entry in bundle.get("entry", []):
        resource = entry.get("resource", {})
        if resource.get("resourceType") == "Device" and device_id(resource) == served_id:
            return dict(resource) | {"id": served_id}
    return None
