"""What each mapper returns: the facts it made and the resources it read but excluded, with why."""

from __future__ import annotations

from dataclasses import dataclass, field

from fhir.resources.R4B.resource import Resource

from fhir_mapping.resources import ParsedResource
from pipeline.evidence.model import (
    Exclusion,
    ExclusionKind,
    Fact,
    FactAttributes,
    SourceRef,
    stable_id,
)


@dataclass(slots=True)
class Mapped:
    facts: list[Fact] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)

    def exclude(self, resource: ParsedResource[Resource], kind: ExclusionKind, reason: str) -> None:
        self.exclusions.append(Exclusion(resource=resource.key, kind=kind, reason=reason))

    def add(
        self, prefix: str, item: ParsedResource[Resource], attributes: FactAttributes, path: str
    ) -> None:
        """A fact read from one element of one resource: its id from the resource's key (the same
        resource makes the same fact on every pull), its category its attributes'."""
        self.facts.append(
            Fact(
                id=stable_id(prefix, item.key),
                category=attributes.category,
                attributes=attributes,
                sources=[ref(item, path)],
            )
        )

    def extend(self, other: Mapped) -> None:
        self.facts.extend(other.facts)
        self.exclusions.extend(other.exclusions)


def ref(resource: ParsedResource[Resource], path: str) -> SourceRef:
    return SourceRef(resource=resource.key, version=resource.version, path=path)
