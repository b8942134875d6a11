"""How a draft is written to an EHR, decided from what its CapabilityStatement says it creates
and what the grant's scopes allow: a Composition, a preliminary DocumentReference, a final one
only after sign-off, or nothing (and why). Pure: the statement is read as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from fhir_mapping.json_values import JsonObject, objects_at, string_at, strings_at
from fhir_mapping.smart_scopes import granted

ACCEPTED_STATUS = "https://provenote.dev/fhir/StructureDefinition/document-status-accepted"


class Strategy(StrEnum):
    """How a draft is written to an EHR. An enum, so that a configured name that is none of these
    (a typo in ``PROVENOTE_WRITEBACK_STRATEGIES``) is refused at start-up, never read as "ask the
    CapabilityStatement"."""

    COMPOSITION = "composition"
    DOCUMENT_REFERENCE = "document-reference"
    FINAL_ONLY = "final-only"
    NONE = "none"


def as_strategy(value: str | None) -> Strategy | None:
    """A stored strategy name as a Strategy; None when it names none."""
    try:
        return Strategy(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Capability:
    """What an EHR's CapabilityStatement says about writing: the types it creates, and the
    ``docStatus`` values its DocumentReference accepts (empty: any)."""

    creatable: frozenset[str]
    document_statuses: frozenset[str] = frozenset()

    @classmethod
    def from_statement(cls, statement: JsonObject) -> Capability:
        """Read from the statement's JSON, not a parsed model: an EHR's statement need not
        validate for the few elements read here to be right, and what is malformed reads as
        absent (a type not known to be creatable is not written)."""
        creatable: set[str] = set()
        statuses: set[str] = set()
        for resource in objects_at(statement, "rest", "resource"):
            kind = string_at(resource, "type")
            if kind is None or "create" not in strings_at(resource, "interaction", "code"):
                continue
            creatable.add(kind)
            if kind == "DocumentReference":
                statuses |= {
                    code
                    for extension in objects_at(resource, "extension")
                    if extension.get("url") == ACCEPTED_STATUS
                    for code in strings_at(extension, "valueCode")
                }
        return cls(frozenset(creatable), frozenset(statuses))

    def allows(self, resource_type: str, scope: str) -> bool:
        """The EHR creates ``resource_type`` and the grant lets us ask it to."""
        return resource_type in self.creatable and granted(
            scope, resource_type, "c", restricted_ok=True
        )


def choose_strategy(capability: Capability, scope: str, forced: Strategy | None = None) -> Strategy:
    if forced:
        return forced
    if capability.allows("Composition", scope):
        return Strategy.COMPOSITION
    if capability.allows("DocumentReference", scope):
        statuses = capability.document_statuses
        if statuses and "preliminary" not in statuses:
            return Strategy.FINAL_ONLY
        return Strategy.DOCUMENT_REFERENCE
    return Strategy.NONE


NoWriteReason = Literal["configured", "not-accepted", "not-permitted"]


def why_nothing_is_written(
    capability: Capability, scope: str, forced: Strategy | None = None
) -> NoWriteReason:
    """Why the strategy is ``none``: the operator said so, the EHR takes no notes from apps, or
    it would but the grant's scopes do not let Provenote write them."""
    if forced == "none":
        return "configured"
    if not ({"Composition", "DocumentReference"} & capability.creatable):
        return "not-accepted"
    return "not-permitted"
