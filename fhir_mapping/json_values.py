"""FHIR JSON as it arrives, before it is parsed: typed as unknown values, read by checked paths.

Some JSON is read before (or instead of) parsing it into R4B models: a record pull decides what
to fetch next from search answers it will parse later, one resource at a time, so that a
malformed one is reported rather than fatal; an EHR's CapabilityStatement or user resource need
not validate for Provenote to read the few elements it uses. There the values are ``object``,
not ``Any``: mypy makes every read check what it found, and a malformed element reads as absent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fhir.resources.R4B.resource import Resource

JsonObject = Mapping[str, object]


def _walk(value: object, path: tuple[str, ...]) -> Iterator[object]:
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, path)
    elif not path:
        yield value
    elif isinstance(value, Mapping):
        yield from _walk(value.get(path[0]), path[1:])


def objects_at(value: object, *path: str) -> list[JsonObject]:
    """The JSON objects at ``path`` (lists on the way are flattened): ``objects_at(statement,
    "rest", "resource")`` is every resource entry of every ``rest``."""
    return [found for found in _walk(value, path) if isinstance(found, Mapping)]


def strings_at(value: object, *path: str) -> list[str]:
    """The non-empty strings at ``path``: ``strings_at(report, "result", "reference")``."""
    return [found for found in _walk(value, path) if isinstance(found, str) and found]


def string_at(value: object, *path: str) -> str | None:
    """The first non-empty string at ``path``; None when there is none."""
    return next(iter(strings_at(value, *path)), None)


def as_json(resource: Resource) -> dict[str, Any]:
    """A parsed resource as FHIR JSON again, as sent to a server or stored: the wire form."""
    return resource.model_dump(mode="json", by_alias=True, exclude_none=True)
