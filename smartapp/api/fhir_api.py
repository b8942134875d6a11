"""Provenote's own FHIR R4 API under ``/fhir``: how other systems pull drafts and signed summaries.

Exactly what ``/fhir/metadata`` lists: Composition read, vread, search (patient, encounter,
status, date, type; ``_count`` and ``_offset`` paging) and ``$document``; Provenance search by
target; Device read; ``Patient/$summarize`` in the FHIR asynchronous pattern (202 and a status
URL to poll). Every request but ``metadata`` needs a bearer token (``smartapp.api.auth``);
errors are OperationOutcomes.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from litestar import Request, get, post
from litestar.params import FromPath
from litestar.response import Response
from sqlalchemy import func, select

from fhir_mapping.hosted import HostedDraft, device_id, document_bundle, hosted_draft
from pipeline.rendering import render
from smartapp.api.auth import ApiAuthError, ApiClient, TokenVerifier
from smartapp.core.db import DraftRevisionRow, DraftRow, JobRow
from smartapp.core.errors import CallerError
from smartapp.core.statuses import DraftStatus, JobState
from smartapp.state import AppState

FHIR_JSON = "application/fhir+json"
DEFAULT_COUNT, MAX_COUNT = 20, 100
# Deeper pages than this are refused (400): a client pages with ``next`` links, or narrows.
MAX_OFFSET = 10_000
# FHIR's id type.
FHIR_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")
DATE_PREFIXES = ("eq", "ne", "gt", "lt", "ge", "le")


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


def outcome(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response[Any]:
    headers = dict(headers or {})
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="provenote", error="invalid_token"'
    body = {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": code, "diagnostics": message}],
    }
    return fhir(body, status, headers)


def _last_updated(draft: DraftRow) -> datetime:
    return draft.updated_at or draft.created_at


def served(draft: DraftRow) -> HostedDraft:
    return hosted_draft(draft.bundle, draft.id, draft.revision, _last_updated(draft))


def _date_matches(value: str, criterion: str) -> bool:
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


def _type_matches(composition: dict[str, Any], token: str) -> bool:
    system, _, code = token.rpartition("|")
    return any(
        coding.get("code") == code and (not system or coding.get("system") == system)
        for coding in composition.get("type", {}).get("coding", [])
    )


def _bare(reference: str, resource_type: str) -> str:
    return reference.rstrip("/").split(f"{resource_type}/")[-1]


def _count(request: Request) -> tuple[int, int]:
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


def searchset(
    base: str,
    resource_type: str,
    params: dict[str, str],
    page: list[dict[str, Any]],
    count: int,
    total: int,
    offset: int,
) -> dict[str, Any]:
    """One page of a search: ``page`` holds the matches from ``offset`` on, of ``total``."""

    def link(relation: str, at: int) -> dict[str, str]:
        query = urlencode(params | {"_count": str(count), "_offset": str(at)})
        return {"relation": relation, "url": f"{base}/{resource_type}?{query}"}

    links = [link("self", offset)]
    # _count=0 asks for the total alone: no page, so no next page either.
    if count > 0 and offset + count < total:
        links.append(link("next", offset + count))
    if count > 0 and offset > 0:
        links.append(link("previous", max(offset - count, 0)))
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": total,
        "link": links,
        "entry": [
            {
                "fullUrl": f"{base}/{resource['resourceType']}/{resource['id']}",
                "resource": resource,
                "search": {"mode": "match"},
            }
            for resource in page
        ],
    }


def page_of(
    base: str,
    resource_type: str,
    params: dict[str, str],
    matches: list[dict[str, Any]],
    count: int,
    offset: int,
) -> dict[str, Any]:
    """The searchset page of ``matches`` (all of them, in hand) from ``offset`` on."""
    page = matches[offset : offset + count]
    return searchset(base, resource_type, params, page, count, len(matches), offset)


def fhir_api_handlers(state: AppState) -> list[Any]:
    settings = state.settings
    database = state.database
    verifier = TokenVerifier(settings, state.http)
    base = settings.api_base

    async def caller(request: Request, resource_type: str, action: str) -> ApiClient:
        client = await verifier.verify(request.headers.get("authorization"))
        client.require(resource_type, action)
        return client

    async def draft_or_404(draft_id: str) -> DraftRow:
        async with database.sessions() as session:
            draft = await session.get(DraftRow, draft_id)
        if draft is None:
            raise ApiError(404, "not-found", f"Composition/{draft_id} is not known")
        return draft

    async def guarded(request: Request, resource_type: str, action: str, work: Any) -> Any:
        try:
            await caller(request, resource_type, action)
            return await work()
        except ApiAuthError as refused:
            return outcome(refused.status_code, refused.code, str(refused))
        except ApiError as failure:
            return outcome(failure.status_code, failure.code, str(failure), failure.headers)

    @get("/fhir/metadata")
    async def metadata() -> Response[Any]:
        statement = render(
            "app/capability_statement.json.j2",
            base=base,
            date=datetime.now(UTC).date().isoformat(),
            token_url=settings.api_token_url
            or (f"{settings.api_issuer.rstrip('/')}/token" if settings.api_issuer else None),
            summarize=bool(settings.api_ehr_base),
        )
        return fhir(json.loads(statement))

    @get("/fhir/Composition/{draft_id:str}")
    async def read_composition(request: Request, draft_id: FromPath[str]) -> Response[Any]:
        async def work() -> Response[Any]:
            draft = await draft_or_404(draft_id)
            return fhir(served(draft).composition, headers={"etag": f'W/"{draft.revision}"'})

        return await guarded(request, "Composition", "r", work)

    @get("/fhir/Composition/{draft_id:str}/_history/{version:str}")
    async def vread_composition(
        request: Request, draft_id: FromPath[str], version: FromPath[str]
    ) -> Response[Any]:
        async def work() -> Response[Any]:
            revision = int(version) if version.isdigit() else -1
            async with database.sessions() as session:
                row = await session.get(DraftRevisionRow, (draft_id, revision))
            if row is None:
                raise ApiError(404, "not-found", f"Composition/{draft_id} has no version {version}")
            hosted = hosted_draft(row.bundle, draft_id, row.revision, row.at)
            return fhir(hosted.composition, headers={"etag": f'W/"{row.revision}"'})

        return await guarded(request, "Composition", "r", work)

    @get("/fhir/Composition")
    async def search_composition(request: Request) -> Response[Any]:
        async def work() -> Response[Any]:
            params = {
                key: request.query_params[key]
                for key in ("patient", "encounter", "status", "date", "type")
                if key in request.query_params
            }
            count, offset = _count(request)
            query = select(DraftRow).order_by(DraftRow.created_at.desc(), DraftRow.id)
            if "patient" in params:
                query = query.where(DraftRow.patient == _bare(params["patient"], "Patient"))
            if "encounter" in params:
                encounter = _bare(params["encounter"], "Encounter")
                query = query.where(DraftRow.encounter == encounter)
            if "status" in params:
                # A draft being signed is still preliminary until the EHR has taken it.
                wanted = set(params["status"].split(","))
                signing = DraftStatus.PRELIMINARY in wanted
                stored = wanted | ({DraftStatus.SIGNING.value} if signing else set())
                query = query.where(DraftRow.status.in_(stored))
            async with database.sessions() as session:
                if not {"date", "type"} & params.keys():
                    # Everything is in SQL: count, then read only the page.
                    total = await session.scalar(
                        select(func.count()).select_from(query.order_by(None).subquery())
                    )
                    page = (await session.execute(query.offset(offset).limit(count))).scalars()
                    compositions = [served(draft).composition for draft in page]
                    bundle = searchset(
                        base, "Composition", params, compositions, count, total or 0, offset
                    )
                    return fhir(bundle)
                drafts = list((await session.execute(query)).scalars())
            matches = []
            for draft in drafts:
                composition = served(draft).composition
                if "date" in params and not _date_matches(composition["date"], params["date"]):
                    continue
                if "type" in params and not _type_matches(composition, params["type"]):
                    continue
                matches.append(composition)
            return fhir(page_of(base, "Composition", params, matches, count, offset))

        return await guarded(request, "Composition", "s", work)

    @get("/fhir/Composition/{draft_id:str}/$document")
    async def composition_document(request: Request, draft_id: FromPath[str]) -> Response[Any]:
        async def work() -> Response[Any]:
            draft = await draft_or_404(draft_id)
            async with database.sessions() as session:
                job = await session.get(JobRow, draft.job_id)
            record = job.record if job is not None and job.record else {"entry": []}
            document = document_bundle(
                served(draft),
                record,
                api_base=base,
                ehr_base=draft.iss,
                timestamp=datetime.now(UTC),
            )
            return fhir(document)

        return await guarded(request, "Composition", "r", work)

    @get("/fhir/Provenance")
    async def search_provenance(request: Request) -> Response[Any]:
        async def work() -> Response[Any]:
            target = request.query_params.get("target")
            if not target or "Composition/" not in target:
                raise ApiError(
                    400, "not-supported", "Provenance is searched by target=Composition/{id}"
                )
            count, offset = _count(request)
            async with database.sessions() as session:
                draft = await session.get(DraftRow, _bare(target, "Composition"))
            provenances = served(draft).provenances if draft is not None else []
            params = {"target": target}
            return fhir(page_of(base, "Provenance", params, provenances, count, offset))

        return await guarded(request, "Provenance", "s", work)

    @get("/fhir/Device/{device:str}")
    async def read_device(request: Request, device: FromPath[str]) -> Response[Any]:
        async def work() -> Response[Any]:
            async with database.sessions() as session:
                drafts = (await session.execute(select(DraftRow.bundle))).scalars()
                for bundle in drafts:
                    for entry in bundle["entry"]:
                        resource = entry["resource"]
                        if resource["resourceType"] == "Device" and device_id(resource) == device:
                            return fhir(resource | {"id": device})
            raise ApiError(404, "not-found", f"Device/{device} is not known")

        return await guarded(request, "Device", "r", work)

    @post("/fhir/Patient/{patient:str}/$summarize", status_code=202)
    async def summarize(request: Request, patient: FromPath[str]) -> Response[Any]:
        async def work() -> Response[Any]:
            if not settings.api_ehr_base or state.jobs is None:
                raise ApiError(400, "not-supported", "no EHR is configured for $summarize")
            client = await verifier.verify(request.headers.get("authorization"))
            encounter = request.query_params.get("encounter")
            encounter_id = _bare(encounter, "Encounter") if encounter else None
            for value in (patient, encounter_id):
                if value is not None and not FHIR_ID.fullmatch(value):
                    raise ApiError(400, "invalid", "patient and encounter must be FHIR ids")
            running = await state.jobs.running_for_client(client.client_id)
            if running >= settings.api_max_jobs_per_client:
                raise ApiError(
                    429,
                    "throttled",
                    f"{running} summaries are already running for this client; try again later",
                    {"retry-after": "30"},
                )
            job = await state.jobs.submit(
                settings.api_ehr_base,
                patient,
                encounter_id,
                origin="backend",
                api_client=client.client_id,
            )
            location = f"{base}/_async/{job.id}"
            body = {
                "resourceType": "OperationOutcome",
                "issue": [
                    {"severity": "information", "code": "informational", "diagnostics": "queued"}
                ],
            }
            return fhir(body, 202, {"content-location": location})

        return await guarded(request, "Composition", "c", work)

    @get("/fhir/_async/{job_id:str}")
    async def async_status(request: Request, job_id: FromPath[str]) -> Response[Any]:
        async def work() -> Response[Any]:
            job = await state.jobs.get(job_id) if state.jobs is not None else None
            if job is None or job.api_client is None:
                raise ApiError(404, "not-found", "no such asynchronous request")
            if job.state == JobState.FAILED:
                raise ApiError(500, "exception", job.error or "the summary could not be made")
            draft = await state.jobs.draft_of(job.id) if job.state == JobState.DONE else None
            if draft is None:
                return Response(
                    b"", status_code=202, headers={"x-progress": f"{job.stage}: {job.detail}"}
                )
            composition = served(draft).composition
            result = {
                "resourceType": "Bundle",
                "type": "batch-response",
                "entry": [
                    {
                        "resource": composition,
                        "response": {
                            "status": "201 Created",
                            "location": f"Composition/{draft.id}/_history/{draft.revision}",
                        },
                    }
                ],
            }
            return fhir(result)

        return await guarded(request, "Composition", "r", work)

    return [
        metadata,
        read_composition,
        vread_composition,
        search_composition,
        composition_document,
        search_provenance,
        read_device,
        summarize,
        async_status,
    ]
