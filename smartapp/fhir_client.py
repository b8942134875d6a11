"""An async FHIR R4 client for the EHR: paging, concurrency, retries, size limits, conditions.

Transient answers (429, 500, 502, 503, 504, timeouts, dropped connections) are retried with
exponential backoff and full jitter, honouring ``Retry-After``; a 401 refreshes the token once and
retries. Anything else fails the call with the server's OperationOutcome text. ``pull_record``
either returns everything the pipeline needs or raises: nothing partial is handed on as complete.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_WAIT_S = 30.0
MAX_PAGES = 1000
RECORD_SEARCHES = (
    "Encounter",
    "DocumentReference",
    "MedicationRequest",
    "DiagnosticReport",
    "Observation",
    "Condition",
    "AllergyIntolerance",
    "Procedure",
)


class FhirError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


TokenGetter = Callable[[bool], Awaitable[str | None]]


def _outcome_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    issues = body.get("issue", []) if isinstance(body, dict) else []
    texts = [
        i.get("details", {}).get("text") or i.get("diagnostics") or i.get("code") for i in issues
    ]
    return "; ".join(str(t) for t in texts if t) or f"HTTP {response.status_code}"


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


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
    ) -> None:
        self.base = base.rstrip("/")
        self.http = http
        self.token = token
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_retries = max_retries
        self.page_size = page_size
        self.max_binary_bytes = max_binary_bytes
        self.backoff_s = backoff_s
        self.rng = rng or random.Random()

    def url(self, path: str) -> str:
        return (
            path if path.startswith(("http://", "https://")) else f"{self.base}/{path.lstrip('/')}"
        )

    def _backoff(self, attempt: int) -> float:
        return self.rng.uniform(0, min(MAX_RETRY_WAIT_S, self.backoff_s * 2**attempt))

    async def _headers(self, extra: dict[str, str] | None, refresh: bool) -> dict[str, str]:
        headers = {"accept": "application/fhir+json"} | (extra or {})
        if self.token is not None:
            token = await self.token(refresh)
            if token:
                headers["authorization"] = f"Bearer {token}"
        return headers

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
        refreshed = False
        attempt = 0
        while True:
            sent = await self._headers(headers, refresh=False)
            try:
                async with self.semaphore:
                    request = self.http.build_request(
                        method, self.url(path), params=params, json=json, headers=sent
                    )
                    response = await self.http.send(request, stream=True)
                    try:
                        body = await self._read(response, max_bytes)
                    finally:
                        await response.aclose()
            except httpx.TransportError as error:
                if attempt >= self.max_retries:
                    raise FhirError(
                        f"{method} {path}: no answer after retries ({error})"
                    ) from error
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            if response.status_code == 401 and self.token is not None and not refreshed:
                refreshed = True
                if await self.token(True):
                    continue
            if response.status_code in RETRIED_STATUSES and attempt < self.max_retries:
                wait = retry_after_seconds(response)
                await asyncio.sleep(
                    min(MAX_RETRY_WAIT_S, wait) if wait is not None else self._backoff(attempt)
                )
                attempt += 1
                continue
            if response.status_code >= 400:
                detail = _outcome_text(httpx.Response(response.status_code, content=body))
                raise FhirError(
                    f"{method} {path}: {response.status_code} {detail}", response.status_code
                )
            return response, body

    async def _read(self, response: httpx.Response, max_bytes: int | None) -> bytes:
        limit = max_bytes if max_bytes is not None else 64 * 1024 * 1024
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise FhirError(f"response of {declared} bytes exceeds the limit of {limit}", 413)
        chunks = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise FhirError(f"response exceeds the limit of {limit} bytes", 413)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response, body = await self.request(method, path, **kwargs)
        try:
            return httpx.Response(response.status_code, content=body).json()
        except ValueError as error:
            raise FhirError(f"{method} {path}: the answer is not JSON") from error

    async def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        return await self._json("GET", f"{resource_type}/{resource_id}")

    async def read_reference(self, reference: str) -> dict[str, Any]:
        return await self._json("GET", reference)

    async def binary(self, reference: str) -> dict[str, Any]:
        """A Binary as a FHIR resource, refused when larger than the attachment size limit."""
        return await self._json("GET", reference, max_bytes=self.max_binary_bytes * 4 // 3 + 4096)

    async def search(self, resource_type: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every match, following ``next`` links page by page."""
        page = await self._json("GET", resource_type, params={"_count": self.page_size} | params)
        resources = []
        for _ in range(MAX_PAGES):
            resources += [e["resource"] for e in page.get("entry", []) if "resource" in e]
            links = page.get("link", [])
            following = next((k["url"] for k in links if k.get("relation") == "next"), None)
            if following is None:
                return resources
            page = await self._json("GET", following)
        raise FhirError(f"search {resource_type} did not end within {MAX_PAGES} pages")

    async def create(
        self, resource: dict[str, Any], *, if_none_exist: str | None = None
    ) -> dict[str, Any]:
        headers = {"content-type": "application/fhir+json"}
        if if_none_exist:
            headers["if-none-exist"] = if_none_exist
        return await self._json("POST", resource["resourceType"], json=resource, headers=headers)

    async def update(
        self, resource: dict[str, Any], *, if_match: str | None = None
    ) -> dict[str, Any]:
        headers = {"content-type": "application/fhir+json"}
        if if_match:
            headers["if-match"] = if_match
        path = f"{resource['resourceType']}/{resource['id']}"
        return await self._json("PUT", path, json=resource, headers=headers)


def _references(
    resources: Iterable[dict[str, Any]], pick: Callable[[dict[str, Any]], Iterable[str]]
) -> set[str]:
    return {reference for resource in resources for reference in pick(resource) if reference}


async def pull_record(client: FhirClient, patient_id: str) -> dict[str, Any]:
    """A collection Bundle of the patient and everything the pipeline reads about them."""
    patient_ref = f"Patient/{patient_id}"
    patient, *found = await asyncio.gather(
        client.read("Patient", patient_id),
        *(client.search(kind, {"patient": patient_ref}) for kind in RECORD_SEARCHES),
    )
    resources = [patient, *(resource for batch in found for resource in batch)]
    have = {f"{r['resourceType']}/{r['id']}" for r in resources}
    by_type = {kind: batch for kind, batch in zip(RECORD_SEARCHES, found, strict=True)}
    wanted = _references(
        by_type["MedicationRequest"],
        lambda r: [r.get("medicationReference", {}).get("reference", "")],
    ) | _references(
        by_type["DiagnosticReport"], lambda r: [x.get("reference", "") for x in r.get("result", [])]
    )
    wanted = {ref for ref in wanted if ref and not ref.startswith("#") and ref not in have}
    binaries = _references(
        by_type["DocumentReference"],
        lambda r: [c.get("attachment", {}).get("url", "") for c in r.get("content", [])],
    )
    binaries = {ref for ref in binaries if "Binary/" in ref}
    extra = await asyncio.gather(
        *(client.read_reference(ref) for ref in sorted(wanted)),
        *(client.binary(ref) for ref in sorted(binaries)),
    )
    resources += extra
    return {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {"fullUrl": f"{client.base}/{r['resourceType']}/{r['id']}", "resource": r}
            for r in resources
        ],
    }
