"""The Litestar app: SMART App Launch (EHR and standalone), the launch context, the record pull."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Annotated, Any

from litestar import Litestar, Request, get, post
from litestar.datastructures import Cookie
from litestar.di import Provide
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Response, ServerSentEvent, ServerSentEventMessage
from litestar.static_files import create_static_files_router
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import func, select

import templates
from fhir_mapping.resources import type_counts
from pipeline.rendering import render
from smartapp.api.auth import TokenVerifier
from smartapp.api.controllers import FhirApiController
from smartapp.api.guards import VERIFIER
from smartapp.core.csrf import FIELD, HEADER, csrf_token, csrf_valid
from smartapp.core.db import DraftRow, JobRow, WriteBackRow
from smartapp.core.errors import logged
from smartapp.core.handlers import EXCEPTION_HANDLERS
from smartapp.core.headers import security_headers
from smartapp.core.keys import public_jwks, signing_key
from smartapp.core.logs import request_ids
from smartapp.core.metrics import JOBS
from smartapp.core.responses import error_page, html
from smartapp.core.settings import AppSettings, get_app_settings, normalise_issuer
from smartapp.core.statuses import JobState
from smartapp.drafts.controllers import DraftController
from smartapp.drafts.review import reconcile_claim, stale_claims
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.ehr.pull import pull_record
from smartapp.ehr.writeback import WRITE_BACK_WORDS
from smartapp.jobs.factory import job_queue, job_service
from smartapp.jobs.service import StageHook, job_view
from smartapp.launch.oauth import (
    SmartError,
    authorize_url,
    discover,
    exchange_code,
    new_pkce,
    oauth_error_code,
    requested_scopes,
    validate_id_token,
)
from smartapp.launch.roles import may_review
from smartapp.launch.sessions import LaunchContext, PendingLaunch, SessionStore, StoredTokens
from smartapp.launch.tokens import token_expiry
from smartapp.state import AppState, new_state

STATIC = Path(templates.__file__).parent / "app" / "static"


def _cookie(state: AppState, name: str, value: str, max_age: int | None = None) -> Cookie:
    return Cookie(
        key=name,
        value=value,
        httponly=True,
        samesite="lax",
        secure=state.settings.secure_cookies or state.settings.https,
        path="/",
        max_age=max_age,
    )


async def _stay_class(client: FhirClient, encounter: str) -> str | None:
    """The encounter's class code, or None when the EHR does not let us read it."""
    try:
        resource = await client.read("Encounter", encounter)
    except FhirError:
        return None
    kind = resource.get("class")
    return kind.get("code") if isinstance(kind, dict) else None


async def reconcile_signatures(state: AppState) -> list[str]:
    """Claims of signatures left by a process that died are settled with the EHR, asked with
    the signer's session while it lasts; each claim's outcome."""
    outcomes = []
    for row in await stale_claims(state.database, state.settings.signing_timeout_s):
        session_id = row.signing_session or ""
        live = await state.store.stored_context(session_id) if session_id else None
        client = state.access.client_for(session_id, row.iss) if live else None
        outcomes.append(await reconcile_claim(state.database, row, client, state.installation))
    return outcomes


def create_app(
    settings: AppSettings | None = None, stage_hook: StageHook | None = None
) -> Litestar:
    """The app; ``stage_hook`` runs as each job stage starts (tests use it to interrupt a job)."""
    settings = settings or get_app_settings()
    state = new_state(settings)
    database = state.database
    streams: Counter[str] = Counter()

    @get("/launch")
    async def launch(
        iss: FromQuery[str | None] = None, launch: FromQuery[str | None] = None
    ) -> Response[Any]:
        if not iss:
            return error_page("The launch did not say which EHR it came from (no iss parameter).")
        registration = settings.registration_for(iss)
        if registration is None:
            # Nothing is fetched from an issuer that is not configured, and nothing it sent is
            # echoed back: /launch is neither a request-forgery tool nor an open redirect.
            return error_page("This app is not configured to be launched from that EHR.", 403)
        try:
            config = await discover(state.http, registration)
        except SmartError as error:
            return error_page(str(error), 502)
        if (
            config.code_challenge_methods_supported
            and "S256" not in config.code_challenge_methods_supported
        ):
            return error_page("The EHR does not support PKCE S256, which this app requires.", 502)
        binding = SessionStore.new_id()
        verifier, challenge = new_pkce()
        nonce = secrets.token_urlsafe(24)
        state_value = secrets.token_urlsafe(32)
        await state.store.add_pending(
            state_value,
            binding,
            PendingLaunch(iss=registration.issuer, config=config, verifier=verifier, nonce=nonce),
        )
        target = authorize_url(
            config,
            client_id=registration.client_id,
            redirect_uri=settings.redirect_uri,
            scope=requested_scopes(
                config, ehr_launch=bool(launch), offline=settings.offline_access
            ),
            state=state_value,
            aud=iss,
            challenge=challenge,
            launch=launch,
            nonce=nonce,
        )
        return Redirect(
            target, status_code=302, cookies=[_cookie(state, state.launch_cookie, binding, 600)]
        )

    @get("/callback")
    async def callback(
        request: Request,
        code: FromQuery[str | None] = None,
        state_param: Annotated[str | None, QueryParameter(name="state")] = None,
        error: FromQuery[str | None] = None,
        error_description: FromQuery[str | None] = None,
        iss: FromQuery[str | None] = None,
    ) -> Response[Any]:
        pending = await state.store.take_pending(
            state_param or "", request.cookies.get(state.launch_cookie)
        )
        if error:
            error_id = logged("authorization refused", f"{error}: {error_description}")
            shown = oauth_error_code(error) or "refused"
            return error_page(
                f"The EHR refused the authorization ({shown}; error {error_id}).", 403
            )
        if pending is None:
            return error_page(
                "The launch's state is unknown, expired, already used, or from another browser."
            )
        config = pending.config
        if (iss is not None or config.authorization_response_iss_parameter_supported) and (
            normalise_issuer(iss or "") != normalise_issuer(config.issuer or "")
        ):
            return error_page("The authorization response came from another server.", 403)
        if not code:
            return error_page("The EHR sent no authorization code.")
        try:
            registration = state.access.registration(pending.iss)
            tokens = await exchange_code(
                state.http,
                config,
                registration,
                state.access.key_for(registration),
                code=code,
                verifier=pending.verifier,
                redirect_uri=settings.redirect_uri,
            )
            claims = (
                await validate_id_token(
                    state.http, config, tokens.id_token, registration.client_id, pending.nonce
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
            config=config, tokens=tokens, expires_at=token_expiry(tokens.expires_in)
        )
        # A new session, whose id only the server chose: never the cookie the browser brought.
        session_id = SessionStore.new_id()
        await state.store.save(session_id, context, stored)
        cookies = [
            _cookie(state, state.session_cookie, session_id),
            _cookie(state, state.launch_cookie, "", 0),
        ]
        if context.patient and context.encounter:
            client = state.access.client_for(session_id, context.iss)
            kind = await _stay_class(client, context.encounter)
            if kind is not None and kind not in settings.inpatient_classes:
                page = error_page(
                    f"Provenote drafts discharge summaries for inpatient stays; this encounter "
                    f"is of class {kind}. Nothing was drafted or written to the chart.",
                    409,
                    heading="Not an inpatient stay",
                )
                page.cookies.extend(cookies)
                return page
        if context.patient and state.jobs is not None:
            await state.jobs.submit(
                context.iss,
                context.patient,
                context.encounter,
                session_id=session_id,
                may_write=may_review(settings, context),
            )
        return Redirect("/", status_code=302, cookies=cookies)

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

    async def visible_job(
        request: Request, job_id: str
    ) -> tuple[str, LaunchContext, JobRow] | None:
        """The job, if the requesting session's launch is about its patient on its EHR."""
        session_id = request.cookies.get(state.session_cookie)
        context = await state.store.context(session_id)
        job = await state.jobs.get(job_id) if state.jobs is not None else None
        if job is None or context is None or session_id is None:
            return None
        if context.patient != job.patient or context.iss != job.iss:
            return None
        return session_id, context, job

    async def write_back_of(draft: DraftRow | None) -> WriteBackRow | None:
        if draft is None:
            return None
        async with database.sessions() as session:
            return (
                await session.execute(select(WriteBackRow).where(WriteBackRow.draft_id == draft.id))
            ).scalar_one_or_none()

    @get("/")
    async def landing(request: Request) -> Response[str]:
        session_id = request.cookies.get(state.session_cookie)
        context = await state.store.context(session_id)
        job, draft = await latest_job(context)
        style = await state.styles.get(context.smart_style_url if context else None)
        page = render(
            "app/landing.html.j2",
            context=context,
            job=job,
            draft=draft,
            write_back=await write_back_of(draft),
            write_back_words=WRITE_BACK_WORDS,
            smart_style=style,
            csrf=csrf_token(state.secret, session_id) if context and session_id else "",
        )
        return html(page)

    @get("/jobs/{job_id:str}")
    async def job_api(request: Request, job_id: FromPath[str]) -> Response[Any]:
        found = await visible_job(request, job_id)
        if found is None or state.jobs is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        draft = await state.jobs.draft_of(job_id)
        return Response(job_view(found[2]) | {"draft": draft.id if draft else None})

    @post("/jobs/{job_id:str}/retry")
    async def job_retry(request: Request, job_id: FromPath[str]) -> Response[Any]:
        found = await visible_job(request, job_id)
        if found is None or state.jobs is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        form = await request.form()
        presented = request.headers.get(HEADER) or form.get(FIELD)
        if not csrf_valid(state.secret, found[0], presented):
            return Response({"error": "missing or wrong CSRF token"}, status_code=403)
        retried = await state.jobs.retry(job_id)
        if request.headers.get("accept", "").startswith("text/html"):
            return Redirect("/", status_code=303)
        return Response(job_view(retried or found[2]), status_code=202)

    @get("/jobs/{job_id:str}/events")
    async def job_events(
        request: Request, job_id: FromPath[str]
    ) -> Response[Any] | ServerSentEvent:
        found = await visible_job(request, job_id)
        if found is None or state.jobs is None:
            return Response({"error": "no such job in this launch context"}, status_code=404)
        session_id = found[0]
        if streams[session_id] >= settings.max_event_streams:
            return Response(
                {"error": "too many progress streams open for this session"},
                status_code=429,
                headers={"retry-after": "5"},
            )
        jobs = state.jobs
        streams[session_id] += 1

        async def stream() -> AsyncGenerator[ServerSentEventMessage, None]:
            queue = jobs.listen(job_id)
            try:
                current = await jobs.get(job_id)
                view = job_view(current) if current is not None else {}
                yield ServerSentEventMessage(data=json.dumps(view), event="progress")
                while view.get("state") not in {JobState.DONE, JobState.FAILED}:
                    with contextlib.suppress(TimeoutError):
                        view = await asyncio.wait_for(queue.get(), timeout=15)
                        yield ServerSentEventMessage(data=json.dumps(view), event="progress")
                        continue
                    # No news: the job may have ended in another process, or the session.
                    current = await jobs.get(job_id)
                    view = job_view(current) if current else {"state": JobState.FAILED}
                    if await state.store.stored_context(session_id) is None:
                        break
                yield ServerSentEventMessage(data=json.dumps(view), event="progress")
            finally:
                jobs.unlisten(job_id, queue)
                streams[session_id] -= 1

        return ServerSentEvent(stream())

    @post("/logout")
    async def logout(request: Request) -> Response[Any]:
        session_id = request.cookies.get(state.session_cookie)
        form = await request.form()
        if session_id and not csrf_valid(state.secret, session_id, form.get(FIELD)):
            return error_page("The form's security token is missing or wrong.", 403, "Refused")
        await state.store.end(session_id)
        page = error_page(
            "You are signed out of Provenote. Launch it again from the patient's chart.",
            200,
            heading="Signed out",
        )
        page.cookies.append(_cookie(state, state.session_cookie, "", 0))
        return page

    @get("/api/context")
    async def context_api(request: Request) -> Response[Any]:
        context = await state.store.context(request.cookies.get(state.session_cookie))
        if context is None:
            return Response({"error": "no launch in this session"}, status_code=401)
        return Response(context.model_dump())

    @get("/api/record")
    async def record_api(request: Request) -> Response[Any]:
        session_id = request.cookies.get(state.session_cookie)
        context = await state.store.context(session_id)
        if context is None or session_id is None or not context.patient:
            return Response(
                {"error": "no patient in this session's launch context"}, status_code=401
            )
        try:
            bundle = await pull_record(
                state.access.client_for(session_id, context.iss), context.patient, context.encounter
            )
        except FhirError as failure:
            return Response({"error": str(failure)}, status_code=502)
        counts = type_counts(bundle)
        return Response(
            {"patient": context.patient, "encounter": context.encounter, "counts": counts}
        )

    @get("/.well-known/jwks.json")
    async def jwks() -> dict[str, Any]:
        registrations = [settings.registration_for(iss) for iss in settings.allowed_issuers]
        keys = [state.access.key_for(r) for r in [*registrations, *settings.registrations] if r]
        if settings.client_auth == "private_key_jwt":
            keys.append(signing_key(settings))
        return public_jwks([key for key in keys if key is not None])

    @get("/health")
    async def health() -> dict[str, str]:
        """Alive: the process answers (for an orchestrator's liveness probe)."""
        return {"status": "alive"}

    @get("/ready")
    async def ready() -> Response[Any]:
        """Ready for traffic: its database and job queue answer. The EHRs are not asked: one
        EHR down must not take the app out of a load balancer serving the others."""
        jobs = state.jobs

        async def queue_ready() -> bool:
            return jobs is not None and await jobs.ready()

        checks = {"database": database.ping, "queue": queue_ready}
        results = {}
        for name, check in checks.items():
            try:
                results[name] = "ok" if await check() else "failing"
            except Exception as failure:  # a probe reports what fails; it never raises
                results[name] = "failing"
                logged(f"readiness check {name} failed", repr(failure))
        ok = all(result == "ok" for result in results.values())
        return Response(
            {"status": "ready" if ok else "not ready", "checks": results},
            status_code=200 if ok else 503,
        )

    @get("/metrics", media_type=CONTENT_TYPE_LATEST)
    async def metrics() -> Response[bytes]:
        """Prometheus exposition: this process's counters, and jobs by state (installation-wide,
        from the database)."""
        async with database.sessions() as session:
            counted = await session.execute(
                select(JobRow.state, func.count()).group_by(JobRow.state)
            )
            by_state = {state: count for state, count in counted.all()}
        for name in JobState:
            JOBS.labels(name.value).set(by_state.get(name, 0))
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def sweep_signatures() -> None:
        while True:
            await asyncio.sleep(min(30.0, settings.signing_timeout_s / 2))
            try:
                await reconcile_signatures(state)
            except Exception as failure:  # a sweep that fails is logged and tried again
                logged("reconciling signatures", repr(failure))

    background: list[asyncio.Task[None]] = []

    async def start_up() -> None:
        state.loop = asyncio.get_running_loop()
        await database.migrate()
        state.installation = await database.installation_id(settings.installation_id)
        state.jobs = job_service(
            settings, database, state.access, state.installation, job_queue(settings), stage_hook
        )
        await state.jobs.start()
        background.append(asyncio.create_task(sweep_signatures()))

    async def shut_down() -> None:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
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
            logout,
            DraftController,
            FhirApiController,
            context_api,
            record_api,
            jwks,
            health,
            ready,
            metrics,
            create_static_files_router(path="/static", directories=[STATIC]),
        ],
        before_send=[security_headers(settings)],
        middleware=[request_ids],
        exception_handlers=EXCEPTION_HANDLERS,
        dependencies={"provenote": Provide(lambda: state, sync_to_thread=False)},
        on_startup=[start_up],
        on_shutdown=[shut_down],
        logging_config=None,
    )
    app.state.provenote = state
    setattr(app.state, VERIFIER, TokenVerifier(settings, state.http))
    return app
