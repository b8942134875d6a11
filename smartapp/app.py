"""The Litestar app: SMART App Launch (EHR and standalone), the launch context, the record pull."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Annotated, Any

import httpx
from litestar import Litestar, Request, get, post
from litestar.datastructures import Cookie
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Response, ServerSentEvent, ServerSentEventMessage
from litestar.static_files import create_static_files_router
from sqlalchemy import select

import templates
from pipeline.rendering import render
from smartapp.db import Database, DraftRow, JobRow
from smartapp.fhir_api import SYSTEM_SESSION, fhir_api_handlers
from smartapp.fhir_client import FhirClient, FhirError, pull_record
from smartapp.jobs import JobService, StageHook, job_view
from smartapp.keys import app_secret, public_jwks, signing_key, token_cipher
from smartapp.oauth import (
    SmartError,
    authorize_url,
    discover,
    exchange_code,
    new_pkce,
    requested_scopes,
    validate_id_token,
)
from smartapp.pages import error_page, html, review_handlers
from smartapp.sessions import LaunchContext, PendingLaunch, SessionStore, StoredTokens
from smartapp.settings import AppSettings, get_app_settings
from smartapp.state import (
    SESSION_COOKIE,
    AppState,
    backend_fhir_client,
    fhir_client_for,
    token_expiry,
)
from smartapp.style import StyleCache

STATIC = Path(templates.__file__).parent / "app" / "static"


def _session_cookie(settings: AppSettings, session_id: str) -> Cookie:
    return Cookie(
        key=SESSION_COOKIE,
        value=session_id,
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
        path="/",
    )


def create_app(
    settings: AppSettings | None = None, stage_hook: StageHook | None = None
) -> Litestar:
    """The app; ``stage_hook`` runs as each job stage starts (tests use it to interrupt a job)."""
    settings = settings or get_app_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    key = signing_key(settings) if settings.client_auth == "private_key_jwt" else None
    database = Database(settings.database_dsn)
    http = httpx.AsyncClient(timeout=settings.http_timeout_s)
    state = AppState(
        settings=settings,
        database=database,
        store=SessionStore(database, token_cipher(settings)),
        key=key,
        http=http,
        secret=app_secret(settings),
        styles=StyleCache(http),
    )

    async def client_for_job(job: JobRow) -> tuple[FhirClient, str]:
        if job.session_id.startswith(SYSTEM_SESSION):
            return await backend_fhir_client(state, job.iss)
        context = await state.store.context(job.session_id)
        if context is None:
            raise RuntimeError("the job's launch session is gone; launch again from the chart")
        return fhir_client_for(state, job.session_id, context), context.scope

    @get("/launch")
    async def launch(
        request: Request, iss: FromQuery[str | None] = None, launch: FromQuery[str | None] = None
    ) -> Response[Any]:
        if not iss:
            return error_page("The launch did not say which EHR it came from (no iss parameter).")
        if settings.allowed_issuers and iss not in settings.allowed_issuers:
            return error_page(f"This app is not configured to be launched from {iss}.", 403)
        try:
            config = await discover(state.http, iss)
        except SmartError as error:
            return error_page(str(error), 502)
        if (
            config.code_challenge_methods_supported
            and "S256" not in config.code_challenge_methods_supported
        ):
            return error_page(f"{iss} does not support PKCE S256, which this app requires.", 502)
        session_id = request.cookies.get(SESSION_COOKIE) or SessionStore.new_id()
        verifier, challenge = new_pkce()
        state_value = secrets.token_urlsafe(32)
        state.store.add_pending(
            state_value, PendingLaunch(session_id, iss, config, verifier, time.time())
        )
        target = authorize_url(
            config,
            client_id=settings.client_id,
            redirect_uri=settings.redirect_uri,
            scope=requested_scopes(
                config, ehr_launch=bool(launch), offline=settings.offline_access
            ),
            state=state_value,
            aud=iss,
            challenge=challenge,
            launch=launch,
        )
        return Redirect(target, status_code=302, cookies=[_session_cookie(settings, session_id)])

    @get("/callback")
    async def callback(
        request: Request,
        code: FromQuery[str | None] = None,
        state_param: Annotated[str | None, QueryParameter(name="state")] = None,
        error: FromQuery[str | None] = None,
        error_description: FromQuery[str | None] = None,
    ) -> Response[Any]:
        session_id = request.cookies.get(SESSION_COOKIE)
        pending = state.store.take_pending(state_param or "", session_id)
        if error:
            return error_page(
                f"The EHR refused the authorization: {error} {error_description or ''}", 403
            )
        if pending is None or session_id is None:
            return error_page(
                "The launch's state is unknown, already used, or from another browser."
            )
        if not code:
            return error_page("The EHR sent no authorization code.")
        try:
            tokens = await exchange_code(
                state.http,
                pending.config,
                settings,
                state.key,
                code=code,
                verifier=pending.verifier,
            )
            claims = (
                await validate_id_token(
                    state.http, pending.config, tokens.id_token, settings.client_id
                )
                if tokens.id_token
                else {}
            )
        except SmartError as failure:
            return error_page(str(failure), 502)
        context = LaunchContext(
            iss=pending.iss,
            patient=tokens.patient,
            encounter=tokens.encounter,
            fhir_user=claims.get("fhirUser"),
            need_patient_banner=tokens.need_patient_banner,
            smart_style_url=tokens.smart_style_url,
            scope=tokens.scope,
        )
        stored = StoredTokens(
            config=pending.config, tokens=tokens, expires_at=token_expiry(tokens.expires_in)
        )
        await state.store.save(session_id, context, stored)
        if context.patient and state.jobs is not None:
            await state.jobs.submit(session_id, context.iss, context.patient, context.encounter)
        return Redirect("/", status_code=302)

    async def latest_job(context: LaunchContext | None) -> tuple[JobRow | None, DraftRow | None]:
        """The newest job for the launch context's patient and encounter (it may be shared)."""
        if context is None or not context.patient:
            return None, None
        async with database.sessions() as session:
            job = (
                await session.execute(
                    select(JobRow)
                    .where(
                        JobRow.iss == context.iss,
                        JobRow.patient == context.patient,
                        JobRow.encounter == context.encounter,
                    )
                    .order_by(JobRow.created_at.desc())
                    .limit(1)
                )
            ).scalar_one_or_none()
        draft = await state.jobs.draft_of(job.id) if job is not None and state.jobs else None
        return job, draft

    async def visible_job(request: Request, job_id: FromPath[str]) -> JobRow | None:
        """The job, if the requesting session's launch context is about its patient."""
        context = await state.store.context(request.cookies.get(SESSION_COOKIE))
        job = await state.jobs.get(job_id) if state.jobs is not None else None
        if job is None or context is None or context.patient != job.patient:
            return None
        return job

    @get("/")
    async def landing(request: Request) -> Response[str]:
        context = await state.store.context(request.cookies.get(SESSION_COOKIE))
        job, draft = await latest_job(context)
        style = await state.styles.get(context.smart_style_url if context else None)
        page = render(
            "app/landing.html.j2", context=context, job=job, draft=draft, smart_style=style
        )
        return html(page)

    @get("/jobs/{job_id:str}")
    async def job_api(request: Request, job_id: FromPath[str]) -> Response[Any]:
        job = await visible_job(request, job_id)
        if job is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        draft = await state.jobs.draft_of(job_id) if state.jobs is not None else None
        return Response(job_view(job) | {"draft": draft.id if draft else None})

    @post("/jobs/{job_id:str}/retry")
    async def job_retry(request: Request, job_id: FromPath[str]) -> Response[Any]:
        job = await visible_job(request, job_id)
        if job is None or state.jobs is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        retried = await state.jobs.retry(job_id)
        return Response(job_view(retried or job), status_code=202)

    @get("/jobs/{job_id:str}/events")
    async def job_events(
        request: Request, job_id: FromPath[str]
    ) -> Response[Any] | ServerSentEvent:
        job = await visible_job(request, job_id)
        if job is None or state.jobs is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        jobs = state.jobs

        async def stream() -> AsyncGenerator[ServerSentEventMessage, None]:
            queue = jobs.listen(job_id)
            try:
                current = await jobs.get(job_id)
                view = job_view(current) if current is not None else {}
                yield ServerSentEventMessage(data=json.dumps(view), event="progress")
                while view.get("state") not in {"done", "failed"}:
                    view = await queue.get()
                    yield ServerSentEventMessage(data=json.dumps(view), event="progress")
            finally:
                jobs.unlisten(job_id, queue)

        return ServerSentEvent(stream())

    @get("/api/context")
    async def context_api(request: Request) -> Response[Any]:
        context = await state.store.context(request.cookies.get(SESSION_COOKIE))
        if context is None:
            return Response({"error": "no launch in this session"}, status_code=401)
        return Response(context.model_dump())

    @get("/api/record")
    async def record_api(request: Request) -> Response[Any]:
        session_id = request.cookies.get(SESSION_COOKIE)
        context = await state.store.context(session_id)
        if context is None or session_id is None or not context.patient:
            return Response(
                {"error": "no patient in this session's launch context"}, status_code=401
            )
        try:
            bundle = await pull_record(fhir_client_for(state, session_id, context), context.patient)
        except FhirError as failure:
            return Response({"error": str(failure)}, status_code=502)
        counts = Counter(entry["resource"]["resourceType"] for entry in bundle["entry"])
        return Response(
            {"patient": context.patient, "encounter": context.encounter, "counts": counts}
        )

    @get("/.well-known/jwks.json")
    async def jwks() -> dict[str, Any]:
        return public_jwks(state.key) if state.key is not None else {"keys": []}

    async def start_up() -> None:
        state.loop = asyncio.get_running_loop()
        await database.migrate()
        state.jobs = JobService(
            database,
            client_for_job,
            workers=settings.job_workers,
            lease_s=settings.job_lease_s,
            forced_strategies=settings.writeback_strategies,
            stage_hook=stage_hook,
        )
        await state.jobs.start()

    async def shut_down() -> None:
        if state.jobs is not None:
            await state.jobs.stop()
        await state.http.aclose()
        await database.dispose()

    app = Litestar(
        route_handlers=[
            launch,
            callback,
            landing,
            job_api,
            job_retry,
            job_events,
            *review_handlers(state),
            *fhir_api_handlers(state),
            context_api,
            record_api,
            jwks,
            create_static_files_router(path="/static", directories=[STATIC]),
        ],
        on_startup=[start_up],
        on_shutdown=[shut_down],
        logging_config=None,
    )
    app.state.provenote = state
    return app
