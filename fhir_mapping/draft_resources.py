"""The draft as typed FHIR R4B resources: what the rest of Provenote gets instead of a bundle.

A draft is built as R4B models (``fhir_mapping.composition``) and stored as its transaction
Bundle's JSON (the form other systems read back). Whoever signs it or writes it to an EHR parses
that JSON here, once (``stored_draft``), and takes the Bundle apart into validated models rather
than picking entries out of JSON by ``resourceType``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.composition import Composition
from fhir.resources.R4B.device import Device
from fhir.resources.R4B.provenance import Provenance

from fhir_mapping.json_values import JsonObject


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


def draft_resources(bundle: Bundle) -> DraftResources:
    """The typed resources of a draft bundle; ValueError when it is not a draft."""
    compositions: list[tuple[str, Composition]] = []
    devices: list[tuple[str, Device]] = []
    provenances: list[Provenance] = []
    for entry in bundle.entry or []:
        resource, url = entry.resource, entry.fullUrl or ""
        if isinstance(resource, Composition):
            compositions.append((url, resource))
        elif isinstance(resource, Device):
            devices.append((url, resource))
        elif isinstance(resource, Provenance):
            provenances.append(resource)
        else:
            kind = resource.get_resource_type() if resource is not None else "empty entry"
            raise ValueError(f"a draft bundle holds no {kind}")
    if len(compositions) != 1 or len(devices) != 1:
        raise ValueError("a draft bundle holds one Composition and one Device")
    (composition_url, composition), (device_url, device) = compositions[0], devices[0]
    return DraftResources(composition_url, composition, device_url, device, tuple(provenances))


def stored_draft(stored: JsonObject) -> Bundle:
    """A draft bundle as stored (its JSON) parsed again; ValueError when it does not validate."""
    return Bundle.model_validate(stored)
