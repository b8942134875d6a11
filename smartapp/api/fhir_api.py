"""The FHIR API's answers: resources, OperationOutcomes, search pages and their parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from litestar import Request
from litestar.response import Response

from fhir_mapping.hosted import HostedDraft, hosted_draft
from smartapp.core.errors import CallerError
from smartapp.core.handlers import FHIR_JSON
from smartapp.core.tables import DraftRow

DEFAULT_COUNT, MAX_COUNT = 20, 100
# Deeper pages than this are refused (400): a client pages with ``next`` links, or narrows.
MAX_OFFSET = 10_000
# FHIR's id type.
FHIR_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")
DATE_PREFIXES = ("eq", "ne", "gt", "lt", "ge", "le")
# The API's search parameters (name, FHIR type) by resource type: what the CapabilityStatement
# advertises and what the searches read, from this one list; every search also pages.
SEARCH_PARAMETERS: dict[str, tuple[tuple[str, str], ...]] = {
    "Composition": (
        ("patient", "reference"),
        ("encounter", "reference"),
        ("status", "token"),
        ("date", "date"),
        ("type", "token"),
    ),
    "Provenance": (("target", "reference"),),
}
PAGING_PARAMETERS = (("_count", "number"), ("_offset", "number"))


def search_parameters(resource_type: str, request: Request[Any, Any, Any]) -> dict[str, str]:
    """The search parameters of ``resource_type`` the request gives, by name."""
    query = request.query_params
    return {name: query[name] for name, _ in SEARCH_PARAMETERS[resource_type] if name in query}


class ApiError(CallerError):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status_code, self.code, self.headers = status, code, headers or {}


def fhir(
    resource: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> Response[Any]:
    return Response(resource, status_code=status, media_type=FHIR_JSON, headers=headers or {})


def _last_updated(draft: DraftRow) -> datetime:
    return draft.updated_at or draft.created_at


def served(draft: DraftRow) -> HostedDraft:
    return hosted_draft(draft.bundle, draft.id, draft.revision, _last_updated(draft))


def date_matches(value: str, criterion: str) -> bool:
    """FHIR date search on a dateTime, to the precision the criterion gives."""
    prefix, bound = "eq", criterion
    if criterion[:2] in DATE_PREFIXES and not criterion[:2].isdigit():
        prefix, bound = criterion[:2], criterion[2:]
    candidate = value[: len(bound)]
    return {
        "eq": candidate == bound,
        "ne": candidate != bound,
        "gt": candidate > bound,
        "lt": candidate < bound,
        "ge": candidate >= bound,
        "le": candidate <= bound,
    }[prefix]


def type_matches(composition: dict[str, Any], token: str) -> bool:
    system, _, code = token.rpartition("|")
    return any(
        coding.get("code") == code and (not system or coding.get("system") == system)
        for coding in composition.get("type", {}).get("coding", [])
    )


def bare_id(reference: str, resource_type: str) -> str:
    return reference.rstrip("/").split(f"{resource_type}/")[-1]


def paging(request: Request[Any, Any, Any]) -> tuple[int, int]:
    try:
        count = int(request.query_params.get("_count", DEFAULT_COUNT))
        offset = int(request.query_params.get("_offset", 0))
    except ValueError as error:
        raise ApiError(400, "invalid", "_count and _offset are whole numbers") from error
    if count < 0 or offset < 0:
        raise ApiError(400, "invalid", "_count and _offset cannot be negative")
    if offset > MAX_OFFSET:
        raise ApiError(400, "invalid", f"_offset beyond {MAX_OFFSET}: narrow the search instead")
    return min(count, MAX_COUNT), offset


@dataclass(frozen=True, slots=True)
class Search:
    """A search as asked: at which base, of which resource type, with which parameters, and
    the page wanted; what every page's links repeat."""

    base: str
    resource_type: str
    params: dict[str, str]
    count: int
    offset: int

    def searchset(self, page: list[dict[str, Any]], total: int) -> dict[str, Any]:
        """The page: ``page`` holds the matches from ``offset`` on, of ``total``."""
        count, offset = self.count, self.offset
        links = [self._link("self", offset)]
        # _count=0 asks for the total alone: no page, so no next page either.
        if count > 0 and offset + count < total:
            links.append(self._link("next", offset + count))
        if count > 0 and offset > 0:
            links.append(self._link("previous", max(offset - count, 0)))
        return {
            "resourceType": "Bundle",
            "type": "searchset",
            "total": total,
            "link": links,
            "entry": [
                {
                    "fullUrl": f"{self.base}/{resource['resourceType']}/{resource['id']}",
                    "resource": resource,
                    "search": {"mode": "match"},
                }
                for resource in page
            ],
        }

    def page_of(self, matches: list[dict[str, Any]]) -> dict[str, Any]:
        """The page of ``matches`` (all of them, in hand) from ``offset`` on."""
        page = matches[self.offset : self.offset + self.count]
        return self.searchset(page, len(matches))

    def _link(self, relation: str, at: int) -> dict[str, str]:
        query = urlencode(self.params | {"_count": str(self.count), "_offset": str(at)})
        return {"relation": relation, "url": f"{self.base}/{self.resource_type}?{query}"}
