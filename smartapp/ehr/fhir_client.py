"""An async FHIR R4 client for the EHR: paging, concurrency, retries, size limits, conditions.

Transient answers (429, 500, 502, 503, 504, timeouts, dropped connections) are retried with
exponential backoff and full jitter, honouring ``Retry-After``; a 401 refreshes the token once and
retries (``EhrBearerAuth``). Anything else fails the call with an error that names the request
(method, resource type, status) and an error id; the EHR's answer goes to the log, never to users.
Every request goes under the launch's FHIR base: a URL elsewhere is refused before it is sent.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx

from smartapp.core.errors import EhrError, log, logged, logged_answer
from smartapp.core.metrics import FHIR_REQUESTS, FHIR_RETRIES
from smartapp.core.registrations import origin_of
from smartapp.core.retry_after import (
    MAX_RETRY_WAIT_S,
    RETRIED_STATUSES,
    retry_after_seconds,
    retry_wait,
)
from smartapp.ehr.egress import EhrBearerAuth, TokenGetter, under_base
from smartapp.ehr.fhir_answers import etag_version, resource_type_of, written_location
from smartapp.ehr.rate_gate import RateGate

MAX_PAGES = 1000


class FhirError(EhrError):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class OutsideEhrError(FhirError):
    """A URL outside the launch's FHIR base: it is never requested."""


WRITE_HEADERS = {"content-type": "application/fhir+json", "prefer": "return=representation"}


class FhirClient:
    def __init__(
        self,
        base: str,
        http: httpx.AsyncClient,
        token: TokenGetter | None = None,
        *,
        concurrency: int = 8,
        max_retries: int = 4,
        page_size: int = 100,
        max_binary_bytes: int = 20 * 1024 * 1024,
        backoff_s: float = 0.25,
        rng: random.Random | None = None,
        gate: RateGate | None = None,
    ) -> None:
        self.base = base.rstrip("/")
        self.http = http
        self.auth = EhrBearerAuth(self.base, token) if token is not None else None
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_retries = max_retries
        self.page_size = page_size
        self.max_binary_bytes = max_binary_bytes
        self.backoff_s = backoff_s
        self.rng = rng or random.Random()
        # The installation's budget for this EHR, shared by its processes (None: none).
        self.gate = gate

    def url(self, path: str) -> str:
        """The absolute URL of ``path``; OutsideEhrError when it would leave the FHIR base."""
        url = path if "://" in path else f"{self.base}/{path.lstrip('/')}"
        if not under_base(url, self.base):
            raise OutsideEhrError("the URL is outside the EHR")
        return url

    def _backoff(self, attempt: int) -> float:
        return self.rng.uniform(0, min(MAX_RETRY_WAIT_S, self.backoff_s * 2**attempt))

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """One FHIR interaction with retries; the response and its body (size-limited)."""
        url = self.url(path)
        kind = resource_type_of(url.removeprefix(self.base))
        what = f"{method} {kind}"
        sent = {"accept": "application/fhir+json"} | (headers or {})
        attempt = 0
        while True:
            if self.gate is not None:
                await self.gate.wait_turn()
            try:
                async with self.semaphore:
                    request = self.http.build_request(
                        method, url, params=params, json=json, headers=sent
                    )
                    response = await self.http.send(request, auth=self.auth, stream=True)
                    try:
                        body = await self._read(response, max_bytes, what)
                    finally:
                        await response.aclose()
            except httpx.TransportError as error:
                FHIR_REQUESTS.labels(method, kind, "none").inc()
                if attempt >= self.max_retries:
                    error_id = logged(f"{what}: no answer", type(error).__name__)
                    raise FhirError(
                        f"{what}: no answer after {attempt + 1} attempts (error {error_id})"
                    ) from error
                FHIR_RETRIES.labels("transport").inc()
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            FHIR_REQUESTS.labels(method, kind, str(response.status_code)).inc()
            # Never the URL: a search's query names the patient and the stay's dates.
            log.info("FHIR %s %s %s", method, kind, response.status_code)
            asked = retry_after_seconds(response)
            if self.gate is not None and asked is not None and response.status_code >= 429:
                # Every process holds off, not only this one.
                await self.gate.hold_off(min(asked, MAX_RETRY_WAIT_S))
            if response.status_code in RETRIED_STATUSES and attempt < self.max_retries:
                FHIR_RETRIES.labels(str(response.status_code)).inc()
                await asyncio.sleep(retry_wait(response, self._backoff(attempt)))
                attempt += 1
                continue
            if response.status_code >= 400:
                status = response.status_code
                error_id = logged_answer(
                    f"{what}: HTTP {status}", body, response.headers.get("content-type")
                )
                raise FhirError(f"{what}: HTTP {status} (error {error_id})", status)
            return response, body

    async def _read(self, response: httpx.Response, max_bytes: int | None, what: str) -> bytes:
        limit = max_bytes if max_bytes is not None else 64 * 1024 * 1024
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise FhirError(f"{what}: answer of {declared} bytes exceeds the limit of {limit}", 413)
        chunks = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise FhirError(f"{what}: answer exceeds the limit of {limit} bytes", 413)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response, body = await self.request(method, path, **kwargs)
        what = f"{method} {resource_type_of(self.url(path).removeprefix(self.base))}"
        try:
            answer = httpx.Response(response.status_code, content=body).json()
        except ValueError as error:
            raise FhirError(f"{what}: the answer is not JSON") from error
        if not isinstance(answer, dict):
            raise FhirError(f"{what}: the answer is not a resource")
        return answer

    async def capability_statement(self) -> dict[str, Any]:
        """The EHR's CapabilityStatement (``GET [base]/metadata``)."""
        return await self._json("GET", "metadata")

    async def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        return await self._json("GET", f"{resource_type}/{resource_id}")

    async def read_reference(self, reference: str) -> dict[str, Any]:
        return await self._json("GET", reference)

    async def binary(self, reference: str) -> dict[str, Any]:
        """A Binary as a FHIR resource, refused when larger than the attachment size limit."""
        return await self._json("GET", reference, max_bytes=self.max_binary_bytes * 4 // 3 + 4096)

    async def search(
        self, resource_type: str, params: Mapping[str, Any], *, pages: int = MAX_PAGES
    ) -> SearchResult:
        """Every match, following ``next`` links page by page while they stay in the EHR; only
        the first ``pages`` pages when a caller wants the top of a sorted search."""
        page = await self._json("GET", resource_type, params={"_count": self.page_size, **params})
        result = SearchResult()
        for number in range(1, MAX_PAGES + 1):
            entries = page.get("entry")
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("resource"), dict):
                    result.resources.append(entry["resource"])
            links = page.get("link")
            following = next(
                (
                    link.get("url")
                    for link in (links if isinstance(links, list) else [])
                    if isinstance(link, dict) and link.get("relation") == "next"
                ),
                None,
            )
            if not isinstance(following, str) or number >= pages:
                return result
            try:
                self.url(following)
            except OutsideEhrError:
                logged(f"search {resource_type}: next link outside the EHR", origin_of(following))
                result.not_fetched.append(
                    (resource_type, "search results incomplete: paging link outside the EHR")
                )
                return result
            page = await self._json("GET", following)
        raise FhirError(f"search {resource_type} did not end within {MAX_PAGES} pages")

    async def _written(
        self, method: str, path: str, resource: dict[str, Any], headers: dict[str, str]
    ) -> dict[str, Any]:
        """A create or update, answered with what the EHR holds now. Many servers answer
        ``201 Created`` with no body unless asked (and some even then): the id and version are
        taken from ``Location`` and ``ETag``, else the resource is read back, so that nothing
        the EHR took goes unrecorded."""
        sent = WRITE_HEADERS | headers
        response, body = await self.request(method, path, json=resource, headers=sent)
        if body.strip():
            try:
                answer = httpx.Response(response.status_code, content=body).json()
            except ValueError:
                answer = None
            if isinstance(answer, dict) and answer.get("resourceType") == resource["resourceType"]:
                return answer
        kind = resource["resourceType"]
        resource_id, version = written_location(response, kind) or (resource.get("id"), None)
        version = version or etag_version(response)
        if resource_id and version:
            return resource | {"id": resource_id, "meta": {"versionId": version}}
        if resource_id:
            return await self.read(kind, str(resource_id))
        condition = headers.get("if-none-exist")
        if condition:
            found = await self.search(resource["resourceType"], dict(parse_qsl(condition)))
            if len(found.resources) == 1:
                return found.resources[0]
        raise FhirError(
            f"{method} {resource['resourceType']}: the EHR took the resource but said neither "
            "its id nor where it is"
        )

    async def count(self, resource_type: str, params: Mapping[str, Any]) -> int | None:
        """How many resources match (``_summary=count``); None when the EHR says no total."""
        answer = await self._json("GET", resource_type, params={**params, "_summary": "count"})
        total = answer.get("total")
        return total if isinstance(total, int) else None

    async def batch(self, bundle: dict[str, Any]) -> dict[str, Any]:
        """A ``batch`` Bundle posted to the base: each entry answered on its own."""
        return await self._json("POST", "", json=bundle, headers=WRITE_HEADERS)

    async def create(
        self, resource: dict[str, Any], *, if_none_exist: str | None = None
    ) -> dict[str, Any]:
        headers = {"if-none-exist": if_none_exist} if if_none_exist else {}
        return await self._written("POST", resource["resourceType"], resource, headers)

    async def update(
        self, resource: dict[str, Any], *, if_match: str | None = None
    ) -> dict[str, Any]:
        headers = {"if-match": if_match} if if_match else {}
        path = f"{resource['resourceType']}/{resource['id']}"
        return await self._written("PUT", path, resource, headers)


@dataclass(slots=True)
class SearchResult:
    resources: list[dict[str, Any]] = field(default_factory=list)
    # (what, why) for everything deliberately left unfetched.
    not_fetched: list[tuple[str, str]] = field(default_factory=list)
