"""What a FHIR server's HTTP answer says beyond its body: where a written resource now lives and
its version (``Location``, ``ETag``), and what a request was about, for messages."""

from __future__ import annotations

import re

import httpx

VERSION_TAG = re.compile(r'(?:W/)?"([^"]+)"')


def resource_type_of(path: str) -> str:
    """What a request relative to the FHIR base is about, for messages: ``Patient``,
    ``metadata``, ``Binary``… (never an id, a query or anything else the URL carries)."""
    segments = [s for s in httpx.URL(path).path.split("/") if s]
    first = segments[0] if segments else ""
    return first if first[:1].isupper() or first in {"metadata", "_history"} else "request"


def written_location(response: httpx.Response, resource_type: str) -> tuple[str, str | None] | None:
    """(id, version) of a written resource from ``Location`` (``…/Type/id/_history/v``), or
    None when the answer names no resource of that type."""
    location = response.headers.get("location") or response.headers.get("content-location")
    if not location:
        return None
    segments = [s for s in httpx.URL(location).path.split("/") if s]
    if resource_type not in segments:
        return None
    after = segments[segments.index(resource_type) + 1 :]
    if not after:
        return None
    version = after[2] if len(after) >= 3 and after[1] == "_history" else None
    return after[0], version


def etag_version(response: httpx.Response) -> str | None:
    """The version an ``ETag`` (``W/"3"``) names."""
    tag = VERSION_TAG.fullmatch(response.headers.get("etag", "").strip())
    return tag.group(1) if tag else None
