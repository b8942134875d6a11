"""The draft as typed FHIR R4B resources: what the rest of Provenote gets instead of a bundle.

A draft is stored as its transaction Bundle (the form other systems read back); whoever writes it
to an EHR or serves it takes it apart here, once, into validated models, rather than picking
entries out of JSON by ``resourceType``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fhir.resources.R4B.composition import Composition
from fhir.resources.R4B.device import Device
from fhir.resources.R4B.provenance import Provenance
from fhir.resources.R4B.resource import Resource


@dataclass(frozen=True, slots=True)
class DraftResources:
    """The draft's Composition, the AI Device that wrote it and the Provenances citing its
    sources, with the ``urn:uuid`` full URLs by which they reference each other."""

    composition_url: str
    composition: Composition
    device_url: str
    device: Device
    provenances: tuple[Provenance, ...]

    @property
    def generated_at(self) -> datetime:
        """When the draft was generated: its Composition's date."""
        date = self.composition.date
        if not isinstance(date, datetime):
            raise ValueError("a draft's Composition is dated to the instant it was generated")
        return date


def as_json(resource: Resource) -> dict[str, Any]:
    """The resource as FHIR JSON, as sent to a server."""
    return resource.model_dump(mode="json", by_alias=True, exclude_none=True)


def draft_resources(bundle: dict[str, Any]) -> DraftResources:
    """The typed resources of a stored draft bundle; ValueError when it is not a draft."""
    compositions: list[tuple[str, Composition]] = []
    devices: list[tuple[str, Device]] = []
    provenances: list[Provenance] = []
    for entry in bundle.get("entry", []):
        resource, url = entry.get("resource", {}), entry.get("fullUrl", "")
        kind = resource.get("resourceType")
        if kind == "Composition":
            compositions.append((url, Composition.model_validate(resource)))
        elif kind == "Device":
            devices.append((url, Device.model_validate(resource)))
        elif kind == "Provenance":
            provenances.append(Provenance.model_validate(resource))
        else:
            raise ValueError(f"a draft bundle holds no {kind}")
    if len(compositions) != 1 or len(devices) != 1:
        raise ValueError("a draft bundle holds one Composition and one Device")
    (composition_url, composition), (device_url, device) = compositions[0], devices[0]
    return DraftResources(composition_url, composition, device_url, device, tuple(provenances))
