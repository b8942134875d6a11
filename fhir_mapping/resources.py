"""FHIR input to an index of parsed resources, and reference resolution within it.

Each resource is parsed on its own with ``fhir.resources.R4B``: one malformed resource is recorded
(resource, reason) and the rest are still mapped, where validating the Bundle whole would lose them
all. Types the mapping does not read are left unparsed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from fhir.resources.R4B import get_fhir_model_class
from fhir.resources.R4B.domainresource import DomainResource
from fhir.resources.R4B.resource import Resource
from pydantic import ValidationError

from fhir_mapping.json_values import JsonObject, objects_at, string_at
from pipeline.errors import InputError
from pipeline.evidence.model import Exclusion

# What a record pull searches by patient: every type the mapping reads about the stay.
RECORD_TYPES = (
    "Encounter",
    "DocumentReference",
    "MedicationRequest",
    "MedicationStatement",
    "DiagnosticReport",
    "Observation",
    "Condition",
    "AllergyIntolerance",
    "Procedure",
    "CarePlan",
    "ServiceRequest",
    "Appointment",
    "Immunization",
    "MedicationAdministration",
    "ImagingStudy",
    "Goal",
    "Device",
    "SupplyDelivery",
)
# Read besides: the patient, and what the searched resources point to.
MAPPED_TYPES = frozenset({"Patient", "Medication", "Binary", *RECORD_TYPES})


# The OperationOutcome in a pulled record that lists what the pull deliberately did not fetch.
NOT_FETCHED_ID = "provenote-not-fetched"


def not_fetched_outcome(items: list[tuple[str, str]]) -> dict[str, Any]:
    """What a record pull left out, as ``(what, why)`` pairs, for the mapping to report."""
    return {
        "resourceType": "OperationOutcome",
        "id": NOT_FETCHED_ID,
        "issue": [
            {"severity": "warning", "code": "security", "diagnostics": why, "expression": [what]}
            for what, why in items
        ],
    }


class EvidenceInputError(InputError):
    """The input as a whole cannot be mapped (not FHIR, no patient, unknown encounter)."""


ResourceT = TypeVar("ResourceT", bound=Resource, covariant=True)
TypedResourceT = TypeVar("TypedResourceT", bound=Resource)


@dataclass(frozen=True, slots=True)
class ParsedResource(Generic[ResourceT]):
    """One resource of the input, parsed: ``ParsedResource[Encounter]`` holds an Encounter, so
    mypy checks the FHIR element names the mapping reads."""

    key: str
    full_url: str | None
    model: ResourceT
    # Attachments whose base64 data was broken, by element path: the resource is kept without them.
    attachment_errors: dict[str, str] = field(default_factory=dict)

    @property
    def resource_type(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def version(self) -> str | None:
        meta = self.model.meta
        return meta.versionId if meta is not None else None


@dataclass(slots=True)
class ResourceIndex:
    resources: list[ParsedResource[Resource]] = field(default_factory=list)
    failures: list[Exclusion] = field(default_factory=list)
    by_key: dict[str, ParsedResource[Resource]] = field(default_factory=dict)
    by_url: dict[str, ParsedResource[Resource]] = field(default_factory=dict)
    # References and URLs the record pull deliberately did not fetch, and why.
    not_fetched: dict[str, str] = field(default_factory=dict)

    def add(self, resource: ParsedResource[Resource]) -> None:
        self.resources.append(resource)
        self.by_key.setdefault(resource.key, resource)
        if resource.full_url:
            self.by_url.setdefault(resource.full_url, resource)

    def of_type(self, kind: type[TypedResourceT]) -> list[ParsedResource[TypedResourceT]]:
        """The resources of one R4B type: ``index.of_type(Encounter)``."""
        return [typed for item in self.resources if (typed := as_type(item, kind)) is not None]

    def resolve(
        self,
        reference: str | None,
        kind: type[TypedResourceT],
        container: ParsedResource[Resource] | None = None,
    ) -> TypedResourceT | None:
        """The resource of ``kind`` a reference points to (``urn:uuid:``, ``Type/id``, absolute
        or ``#local`` in ``container``); None when it points to nothing here, or to another type."""
        found = self._target(reference, container)
        return found if isinstance(found, kind) else None

    def _target(
        self, reference: str | None, container: ParsedResource[Resource] | None
    ) -> Resource | None:
        if not reference:
            return None
        if reference.startswith("#"):
            model = container.model if container is not None else None
            contained = model.contained if isinstance(model, DomainResource) else None
            return next((c for c in contained or [] if c.id == reference[1:]), None)
        if reference in self.by_url:
            return self.by_url[reference].model
        found = self.by_key.get(relative_key(reference))
        return found.model if found is not None else None

    def resolve_key(self, reference: str | None) -> str | None:
        """The index key of a referenced resource in this input, if it is here."""
        if not reference:
            return None
        if reference in self.by_url:
            return self.by_url[reference].key
        key = relative_key(reference)
        return key if key in self.by_key else None


def as_type(
    item: ParsedResource[Resource], kind: type[TypedResourceT]
) -> ParsedResource[TypedResourceT] | None:
    """``item`` as a resource of ``kind``; None when it holds another type."""
    return cast(ParsedResource[TypedResourceT], item) if isinstance(item.model, kind) else None


def relative_key(reference: str) -> str:
    """``http://x/fhir/Patient/1/_history/2`` → ``Patient/1``."""
    parts = reference.split("/_history/")[0].rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else reference


def _entries(data: object) -> list[tuple[str | None, object]]:
    if isinstance(data, dict) and data.get("resourceType") == "Bundle":
        entries = data.get("entry") or []
        if not isinstance(entries, list):
            raise EvidenceInputError("Bundle.entry is not a list")
        return [
            (entry.get("fullUrl"), entry.get("resource"))
            for entry in entries
            if isinstance(entry, dict) and entry.get("resource") is not None
        ]
    if isinstance(data, list):
        return [(None, item) for item in data]
    if isinstance(data, dict) and "resourceType" in data:
        return [(None, data)]
    raise EvidenceInputError("input is neither a FHIR Bundle, a resource, nor a list of resources")


def _first_error(error: ValidationError) -> str:
    details = error.errors()
    if not details:
        return str(error)
    first = details[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "resource"
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


_ATTACHMENT_LISTS = {
    "DocumentReference": ("content", "attachment"),
    "DiagnosticReport": ("presentedForm", None),
}


def _detach_broken_attachments(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Drop attachment data that is not valid base64, so the rest of the resource still maps."""
    errors: dict[str, str] = {}
    where = _ATTACHMENT_LISTS.get(raw["resourceType"])
    if where is None:
        return raw, errors
    element, inner = where
    items = raw.get(element)
    if not isinstance(items, list):
        return raw, errors
    cleaned = copy.deepcopy(raw)
    for position, item in enumerate(cleaned[element]):
        attachment = item.get(inner) if inner and isinstance(item, dict) else item
        if not isinstance(attachment, dict) or not isinstance(attachment.get("data"), str):
            continue
        compact = "".join(attachment["data"].split())
        try:
            base64.b64decode(compact, validate=True)
            attachment["data"] = compact
        except (binascii.Error, ValueError) as error:
            path = f"{element}[{position}]" + (f".{inner}" if inner else "")
            errors[path] = f"attachment data is not valid base64: {error}"
            del attachment["data"]
    return (cleaned, errors) if errors else (raw, errors)


def _record_not_fetched(index: ResourceIndex, outcome: JsonObject) -> None:
    for issue in objects_at(outcome, "issue"):
        what, why = string_at(issue, "expression"), string_at(issue, "diagnostics")
        if what is not None and why is not None:
            index.not_fetched[what] = why
            index.failures.append(Exclusion(resource=what, kind="not_fetched", reason=why))


def type_counts(data: object) -> Counter[str]:
    """How many resources of each type the input holds (malformed entries are not counted)."""
    return Counter(
        str(resource["resourceType"])
        for _, resource in _entries(data)
        if isinstance(resource, dict) and isinstance(resource.get("resourceType"), str)
    )


def record_digest(data: object) -> str:
    """What a pulled record says, as one hash: the same resources in any order, with any
    server bookkeeping (``meta``), give the same digest; any change of content another."""
    contents = sorted(
        json.dumps({k: v for k, v in resource.items() if k != "meta"}, sort_keys=True)
        for _, resource in _entries(data)
        if isinstance(resource, dict)
    )
    return hashlib.sha256("\n".join(contents).encode("utf-8")).hexdigest()


def index_resources(data: object) -> ResourceIndex:
    """Parse every resource of a type the mapping reads; record the ones that fail."""
    index = ResourceIndex()
    for position, (full_url, raw) in enumerate(_entries(data)):
        if not isinstance(raw, dict) or not isinstance(raw.get("resourceType"), str):
            index.failures.append(
                Exclusion(
                    resource=full_url or f"entry[{position}]",
                    kind="parse_error",
                    reason="not a FHIR resource: resourceType is missing",
                )
            )
            continue
        resource_type = raw["resourceType"]
        if resource_type == "OperationOutcome" and raw.get("id") == NOT_FETCHED_ID:
            _record_not_fetched(index, raw)
            continue
        if resource_type not in MAPPED_TYPES:
            continue
        raw_id = raw.get("id")
        key = f"{resource_type}/{raw_id}" if raw_id else f"{resource_type}/{full_url or position}"
        raw, attachment_errors = _detach_broken_attachments(raw)
        try:
            validated = get_fhir_model_class(resource_type).model_validate(raw)
            if not isinstance(validated, Resource):
                raise TypeError(f"{resource_type} is not a resource type")
            model = validated
        except (ValidationError, ValueError, TypeError) as error:
            reason = _first_error(error) if isinstance(error, ValidationError) else str(error)
            index.failures.append(Exclusion(resource=key, kind="parse_error", reason=reason))
            continue
        index.add(ParsedResource(key, full_url, model, attachment_errors))
    return index
