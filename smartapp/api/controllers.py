"""Provenote's own FHIR R4 API under ``/fhir``: how other systems pull drafts and signed summaries.

Exactly what ``/fhir/metadata`` lists: Composition read, vread, search (patient, encounter,
status, date, type; ``_count`` and ``_offset`` paging) and ``$document``; Provenance search by
target; Device read; ``Patient/$summarize`` in the FHIR asynchronous pattern (202 and a status
URL to poll). Every route but ``metadata`` declares the scope it needs and is guarded by
``smartapp.api.guards.api_token``; failures are OperationOutcomes (``smartapp.core.handlers``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath
from litestar.response import Response

from fhir_mapping.hosted import document_bundle, hosted_draft
from pipeline.text.rendering import render
from smartapp.api.auth import ApiClient
from smartapp.api.fhir_api import (
    FHIR_ID,
    PAGING_PARAMETERS,
    SEARCH_PARAMETERS,
    ApiError,
    Search,
    bare_id,
    date_matches,
    fhir,
    paging,
    search_parameters,
    served,
    type_matches,
)
from smartapp.api.guards import CALLER, api_token
from smartapp.core.statuses import DraftStatus, JobOrigin, JobState
from smartapp.core.tables import DraftRow
from smartapp.drafts.store import DraftQuery
from smartapp.state import AppState, Jobs, Provenote


async def _draft_or_404(provenote: AppState, draft_id: str) -> DraftRow:
    draft = await provenote.drafts.get(draft_id)
    if draft is None:
        raise ApiError(404, "not-found", f"Composition/{draft_id} is not known")
    return draft


class FhirApiController(Controller):
    path = "/fhir"
    guards = (api_token,)

    @get("/metadata")
    async def metadata(self, provenote: Provenote) -> Response[Any]:
        settings = provenote.settings
        statement = render(
            "app/capability_statement.json.j2",
            base=settings.api_base,
            date=datetime.now(UTC).date().isoformat(),
            token_url=settings.api_token_url
            or (f"{settings.api_issuer.rstrip('/')}/token" if settings.api_issuer else None),
            summarize=bool(settings.api_ehr_base),
            search_parameters=SEARCH_PARAMETERS,
            paging_parameters=PAGING_PARAMETERS,
        )
        return fhir(json.loads(statement))

    @get("/Composition/{draft_id:str}", opt={"scope": ("Composition", "r")})
    async def read_composition(
        self, provenote: Provenote, draft_id: FromPath[str]
    ) -> Response[Any]:
        draft = await _draft_or_404(provenote, draft_id)
        return fhir(served(draft).composition, headers={"etag": f'W/"{draft.revision}"'})

    @get("/Composition/{draft_id:str}/_history/{version:str}", opt={"scope": ("Composition", "r")})
    async def vread_composition(
        self, provenote: Provenote, draft_id: FromPath[str], version: FromPath[str]
    ) -> Response[Any]:
        revision = int(version) if version.isdigit() else -1
        row = await provenote.drafts.revision(draft_id, revision)
        if row is None:
            raise ApiError(404, "not-found", f"Composition/{draft_id} has no version {version}")
        hosted = hosted_draft(row.bundle, draft_id, row.revision, row.at)
        return fhir(hosted.composition, headers={"etag": f'W/"{row.revision}"'})

    @get("/Composition", opt={"scope": ("Composition", "s")})
    async def search_composition(
        self, provenote: Provenote, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        params = search_parameters("Composition", request)
        search = Search(provenote.settings.api_base, "Composition", params, *paging(request))
        stored: set[str] = set()
        if "status" in params:
            # A draft being signed is still preliminary until the EHR has taken it.
            wanted = set(params["status"].split(","))
            signing = DraftStatus.PRELIMINARY in wanted
            stored = wanted | ({DraftStatus.SIGNING.value} if signing else set())
        query = DraftQuery(
            patient=bare_id(params["patient"], "Patient") if "patient" in params else None,
            encounter=bare_id(params["encounter"], "Encounter") if "encounter" in params else None,
            statuses=frozenset(stored),
        )
        if not {"date", "type"} & params.keys():
            # Everything is in SQL: count, then read only the page.
            page, total = await provenote.drafts.search(query, search.count, search.offset)
            compositions = [served(draft).composition for draft in page]
            return fhir(search.searchset(compositions, total))
        drafts = await provenote.drafts.search_all(query)
        matches = []
        for draft in drafts:
            composition = served(draft).composition
            if "date" in params and not date_matches(composition["date"], params["date"]):
                continue
            if "type" in params and not type_matches(composition, params["type"]):
                continue
            matches.append(composition)
        return fhir(search.page_of(matches))

    @get("/Composition/{draft_id:str}/$document", opt={"scope": ("Composition", "r")})
    async def composition_document(
        self, provenote: Provenote, jobs: Jobs, draft_id: FromPath[str]
    ) -> Response[Any]:
        draft = await _draft_or_404(provenote, draft_id)
        job = await jobs.get(draft.job_id)
        record = job.record if job is not None and job.record else {"entry": []}
        document = document_bundle(
            served(draft),
            record,
            api_base=provenote.settings.api_base,
            ehr_base=draft.iss,
            timestamp=datetime.now(UTC),
        )
        return fhir(document)

    @get("/Provenance", opt={"scope": ("Provenance", "s")})
    async def search_provenance(
        self, provenote: Provenote, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        target = search_parameters("Provenance", request).get("target")
        if not target or "Composition/" not in target:
            raise ApiError(
                400, "not-supported", "Provenance is searched by target=Composition/{id}"
            )
        search = Search(
            provenote.settings.api_base, "Provenance", {"target": target}, *paging(request)
        )
        draft = await provenote.drafts.get(bare_id(target, "Composition"))
        provenances = served(draft).provenances if draft is not None else []
        return fhir(search.page_of(provenances))

    @get("/Device/{device:str}", opt={"scope": ("Device", "r")})
    async def read_device(self, provenote: Provenote, device: FromPath[str]) -> Response[Any]:
        found = await provenote.drafts.device(device)
        if found is None:
            raise ApiError(404, "not-found", f"Device/{device} is not known")
        return fhir(found)

    @post(
        "/Patient/{patient:str}/$summarize",
        status_code=202,
        opt={"scope": ("Composition", "c")},
    )
    async def summarize(
        self,
        provenote: Provenote,
        jobs: Jobs,
        request: Request[Any, Any, Any],
        patient: FromPath[str],
    ) -> Response[Any]:
        settings = provenote.settings
        if not settings.api_ehr_base:
            raise ApiError(400, "not-supported", "no EHR is configured for $summarize")
        client: ApiClient = request.state[CALLER]
        encounter = request.query_params.get("encounter")
        encounter_id = bare_id(encounter, "Encounter") if encounter else None
        for value in (patient, encounter_id):
            if value is not None and not FHIR_ID.fullmatch(value):
                raise ApiError(400, "invalid", "patient and encounter must be FHIR ids")
        running = await jobs.running_for_client(client.client_id)
        if running >= settings.api_max_jobs_per_client:
            raise ApiError(
                429,
                "throttled",
                f"{running} summaries are already running for this client; try again later",
                {"retry-after": "30"},
            )
        job = await jobs.submit(
            settings.api_ehr_base,
            patient,
            encounter_id,
            origin=JobOrigin.BACKEND,
            api_client=client.client_id,
        )
        body = {
            "resourceType": "OperationOutcome",
            "issue": [
                {"severity": "information", "code": "informational", "diagnostics": "queued"}
            ],
        }
        location = f"{settings.api_base}/_async/{job.id}"
        return fhir(body, 202, {"content-location": location})

    @get("/_async/{job_id:str}", opt={"scope": ("Composition", "r")})
    async def async_status(self, jobs: Jobs, job_id: FromPath[str]) -> Response[Any]:
        job = await jobs.get(job_id)
        if job is None or job.api_client is None:
            raise ApiError(404, "not-found", "no such asynchronous request")
        if job.state == JobState.FAILED:
            raise ApiError(500, "exception", job.error or "the summary could not be made")
        draft = await jobs.draft_of(job.id) if job.state == JobState.DONE else None
        if draft is None:
            return Response(
                b"", status_code=202, headers={"x-progress": f"{job.stage}: {job.detail}"}
            )
        result = {
            "resourceType": "Bundle",
            "type": "batch-response",
            "entry": [
                {
                    "resource": served(draft).composition,
                    "response": {
                        "status": "201 Created",
                        "location": f"Composition/{draft.id}/_history/{draft.revision}",
                    },
                }
            ],
        }
        return fhir(result)
