"""How a stored draft is served by Provenote's own FHIR API, and as a FHIR document.

The stored draft is a transaction Bundle linked by ``urn:uuid``; served, its resources get ids:
the Composition the draft's id, each Provenance the uuid of its ``urn``, the Device one id per
software version (derived from its identifier, so every draft of that version names one Device).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fhir.resources.R4B.bundle import Bundle

from fhir_mapping.composition import CANONICAL
from fhir_mapping.json_values import JsonObject, objects_at, string_at
from fhir_mapping.references import rewritten_json

_DEVICE_NAMESPACE = uuid.UUID("0f3c2a4e-7d61-4c1f-9f2b-6a8e5d4c3b21")


@dataclass(frozen=True, slots=True)
class HostedDraft:
    """The draft's resources as served: FHIR JSON, ready for the wire."""

    composition: dict[str, Any]
    device: dict[str, Any]
    provenances: list[dict[str, Any]]


def instant(moment: datetime) -> str:
    """A FHIR instant; a naive time is UTC (SQLite returns stored UTC times without a zone)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def device_id(device: JsonObject) -> str:
    """The served id of a drafting Device: one per software version, from its identifier."""
    identifier = next(iter(objects_at(device, "identifier")), {})
    system, value = string_at(identifier, "system"), string_at(identifier, "value")
    if system is None or value is None:
        raise ValueError("a drafting Device is identified by a system and a value")
    return str(uuid.uuid5(_DEVICE_NAMESPACE, f"{system}|{value}"))


def _entries(bundle: JsonObject) -> dict[str, JsonObject]:
    """The bundle's resources by full URL."""
    return {
        url: resource
        for entry in objects_at(bundle, "entry")
        if (url := string_at(entry, "fullUrl"))
        for resource in objects_at(entry, "resource")
    }


def hosted_draft(
    bundle: JsonObject, composition_id: str, version: int, last_updated: datetime
) -> HostedDraft:
    """The draft's resources with server ids, the Composition at ``version``.

    Served from the stored JSON rather than from parsed models: this runs for every draft on
    every page of a search, and a draft parsed and dumped again costs a tenth of a second."""
    by_url = _entries(bundle)
    targets: dict[str, str] = {}
    for url, resource in by_url.items():
        kind = resource.get("resourceType")
        if kind == "Composition":
            targets[url] = f"Composition/{composition_id}"
        elif kind == "Device":
            targets[url] = f"Device/{device_id(resource)}"
    composition, device, provenances = None, None, []
    for url, stored in by_url.items():
        resource = rewritten_json(stored, targets)
        kind = resource.get("resourceType")
        if kind == "Composition":
            meta = next(iter(objects_at(resource, "meta")), {})
            served_meta = dict(meta) | {
                "versionId": str(version),
                "lastUpdated": instant(last_updated),
            }
            composition = resource | {"id": composition_id, "meta": served_meta}
        elif kind == "Device":
            device = resource | {"id": device_id(resource)}
        elif kind == "Provenance":
            provenances.append(resource | {"id": url.removeprefix("urn:uuid:")})
    if composition is None or device is None:
        raise ValueError("a stored draft needs a Composition and a Device")
    return HostedDraft(composition, device, provenances)


def _reference_targets(value: object) -> set[str]:
    """Every ``reference`` string anywhere in ``value``."""
    if isinstance(value, list):
        return {found for item in value for found in _reference_targets(item)}
    if not isinstance(value, Mapping):
        return set()
    found = {target for child in value.values() for target in _reference_targets(child)}
    reference = value.get("reference")
    return found | {reference} if isinstance(reference, str) else found


def document_bundle(
    hosted: HostedDraft,
    record: JsonObject,
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
        f"{resource.get('resourceType')}/{resource.get('id')}": resource
        for resource in objects_at(record, "entry", "resource")
    }
    wanted = sorted(_reference_targets(composition) & held.keys())
    ehr = ehr_base.rstrip("/")
    absolute = {reference: f"{ehr}/{reference}" for reference in wanted}
    api = api_base.rstrip("/")
    entries = [
        {
            "fullUrl": f"{api}/Composition/{composition['id']}",
            "resource": rewritten_json(composition, absolute),
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


def served_device(bundle: JsonObject, served_id: str) -> dict[str, Any] | None:
    """The draft's Device as served under ``served_id``, if that is its id."""
    for resource in objects_at(bundle, "entry", "resource"):
        if resource.get("resourceType") == "Device" and device_id(resource) == served_id:
            return dict(resource) | {"id": served_id}
    return None
