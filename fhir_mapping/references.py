"""Rewriting references inside a resource: the one place a ``urn:uuid`` becomes a served id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from fhir.resources.R4B.resource import Resource

from fhir_mapping.json_values import JsonObject, as_json

ResourceT = TypeVar("ResourceT", bound=Resource)


def _rewritten(value: object, targets: Mapping[str, str]) -> object:
    if isinstance(value, list):
        return [_rewritten(item, targets) for item in value]
    if isinstance(value, Mapping):
        return rewritten_json(value, targets)
    return value


def rewritten_json(value: JsonObject, targets: Mapping[str, str]) -> dict[str, object]:
    """A deep copy of FHIR JSON whose ``reference`` strings found in ``targets`` are replaced."""
    rewritten = {key: _rewritten(item, targets) for key, item in value.items()}
    reference = rewritten.get("reference")
    if isinstance(reference, str) and reference in targets:
        rewritten["reference"] = targets[reference]
    return rewritten


def rewrite_references(resource: ResourceT, targets: Mapping[str, str]) -> ResourceT:
    """A copy of ``resource`` whose references found in ``targets`` are replaced, validated
    again (a reference may sit in any element, contained resources and extensions included)."""
    return type(resource).model_validate(rewritten_json(as_json(resource), targets))
