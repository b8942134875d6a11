"""What a pulled search brings with it and what the pull then follows: the ``_include`` values
an EHR offers (the Medication an order references, with the order), and the references the
mapping reads that the searches did not bring (medications, results, goals, the Binaries of
notes' attachments).

Pure: JSON in, searches and references out; ``smartapp`` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from fhir_mapping.json_values import JsonObject, objects_at, strings_at
from fhir_mapping.pull_plan import Search


def resource_key(resource: JsonObject) -> str | None:
    """``Type/id`` of a resource as JSON; None for one without both."""
    kind, resource_id = resource.get("resourceType"), resource.get("id")
    return (
        f"{kind}/{resource_id}" if isinstance(kind, str) and isinstance(resource_id, str) else None
    )


# What a search may bring with it (FHIR ``_include``) instead of one read per reference, where
# the EHR's CapabilityStatement offers it: the Medication an order or a statement references
# (EHRs that code medications as resources answer each with a reference).
INCLUDES = {
    "MedicationRequest": "MedicationRequest:medication",
    "MedicationStatement": "MedicationStatement:medication",
}


def offered_includes(capability: object) -> frozenset[str]:
    """The ``_include`` values a CapabilityStatement's server lists (``searchInclude``), of
    those the pull asks for; none from anything malformed."""
    found = {
        include
        for resource in objects_at(capability, "rest", "resource")
        for include in strings_at(resource, "searchInclude")
    }
    return frozenset(found & set(INCLUDES.values()))


def with_includes(searches: Sequence[Search], offered: frozenset[str]) -> list[Search]:
    """Each search, asking for what it references to come with it where the EHR offers that."""
    return [
        Search(s.resource_type, {**s.params, "_include": include})
        if (include := INCLUDES.get(s.resource_type)) in offered
        else s
        for s in searches
    ]


# Where each type the pull follows points to what the mapping reads besides it.
_FOLLOWED: dict[str, tuple[str, ...]] = {
    "MedicationRequest": ("medicationReference", "reference"),
    "MedicationStatement": ("medicationReference", "reference"),
    "DiagnosticReport": ("result", "reference"),
    "CarePlan": ("goal", "reference"),
}
_ATTACHMENT_URL = ("content", "attachment", "url")


def follow_ups(resources: Sequence[JsonObject]) -> tuple[set[str], set[str]]:
    """What the pulled resources point to that the mapping reads and the pull did not bring:
    (medications, results and goals to read; attachments' Binaries to fetch). Malformed
    elements are skipped, not fatal."""
    have = {key for key in map(resource_key, resources) if key}
    wanted: set[str] = set()
    binaries: set[str] = set()
    for resource in resources:
        kind = resource.get("resourceType")
        if isinstance(kind, str) and kind in _FOLLOWED:
            wanted |= set(strings_at(resource, *_FOLLOWED[kind]))
        elif kind == "DocumentReference":
            binaries |= {url for url in strings_at(resource, *_ATTACHMENT_URL) if "Binary/" in url}
    return {ref for ref in wanted if not ref.startswith("#") and ref not in have}, binaries
