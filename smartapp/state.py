"""What the running app holds, and FHIR clients that act with a launch session's tokens."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx
from joserfc.jwk import ECKey, RSAKey

from pipeline.settings import get_settings
from smartapp.db import Database, JobRow
from smartapp.egress import guarded_client
from smartapp.errors import LaunchError
from smartapp.fhir_client import FhirClient, PullBounds, TokenGetter
from smartapp.jobs.progress import PostgresProgressBus, ProgressBus
from smartapp.jobs.queue import InProcessQueue, JobQueue, ProcrastinateQueue
from smartapp.jobs.service import JobService, StageHook
from smartapp.keys import app_secret, private_data_dir, registration_key, token_cipher
from smartapp.oauth import (
    SmartError,
    client_credentials,
    discover,
    refresh_tokens,
    system_scopes,
)
from smartapp.sessions import SessionStore, StoredTokens
from smartapp.settings import AppSettings, ClientRegistration
from smartapp.style import StyleCache

SESSION_COOKIE = "provenote_session"
# Over HTTPS the cookie is host-only, secure and path-wide, which the prefix makes the browser
# enforce (no subdomain can set or shadow it).
SECURE_SESSION_COOKIE = "__Host-provenote_session"
# The binding between /launch and /callback: which browser started the pending launch.
LAUNCH_COOKIE = "provenote_launch"
SECURE_LAUNCH_COOKIE = "__Host-provenote_launch"


@dataclass(slots=True)
class AppState:
    settings: AppSettings
    database: Database
    store: SessionStore
    http: httpx.AsyncClient
    # The secret CSRF tokens are derived from (smartapp.keys.app_secret).
    secret: bytes
    styles: StyleCache
    jobs: JobService | None = None
    loop: asyncio.AbstractEventLoop | None = None
    installation: str = ""
    # SMART Backend Services tokens per EHR, for jobs no user launched ($summarize).
    backend_tokens: dict[str, tuple[str, str, float | None]] = field(default_factory=dict)
    _keys: dict[str, RSAKey | ECKey | None] = field(default_factory=dict)

    @property
    def session_cookie(self) -> str:
        return SECURE_SESSION_COOKIE if self.settings.https else SESSION_COOKIE

    @property
    def launch_cookie(self) -> str:
        return SECURE_LAUNCH_COOKIE if self.settings.https else LAUNCH_COOKIE

    def key_for(self, registration: ClientRegistration) -> RSAKey | ECKey | None:
        """The private_key_jwt key for an EHR (loaded once)."""
        if registration.issuer not in self._keys:
            self._keys[registration.issuer] = registration_key(self.settings, registration)
        return self._keys[registration.issuer]

    def registration(self, iss: str) -> ClientRegistration:
        registration = self.settings.registration_for(iss)
        if registration is None:
            raise SmartError("this EHR is no longer configured for Provenote")
        return registration


def token_expiry(expires_in: int | None) -> float | None:
    return time.time() + expires_in if expires_in else None


def refresh_margin(settings: AppSettings, expires_in: int | None) -> float:
    """How long before expiry a token is refreshed: never more than half its lifetime, so a
    short-lived token is not refreshed on every request."""
    margin = float(settings.refresh_margin_s)
    return min(margin, expires_in / 2) if expires_in else margin


def token_getter(state: AppState, session_id: str) -> TokenGetter:
    """Current access token; refreshed before expiry, or on demand after a 401 (once)."""

    async def get_token(force_refresh: bool) -> str | None:
        async with state.store.refresh_lock(session_id):
            stored = await state.store.tokens(session_id)
            if stored is None:
                return None
            margin = refresh_margin(state.settings, stored.tokens.expires_in)
            expiring = stored.expires_at is not None and (stored.expires_at - time.time() < margin)
            if not (force_refresh or expiring):
                return stored.tokens.access_token
            if not stored.tokens.refresh_token:
                return None if force_refresh else stored.tokens.access_token
            context = await state.store.stored_context(session_id)
            if context is None:
                return None
            try:
                registration = state.registration(context.iss)
                fresh = await refresh_tokens(
                    state.http,
                    stored.config,
                    registration,
                    state.key_for(registration),
                    stored.tokens.refresh_token,
                )
            except SmartError:
                return None
            if fresh.refresh_token is None:
                fresh.refresh_token = stored.tokens.refresh_token
            await state.store.save(
                session_id,
                context,
                StoredTokens(
                    config=stored.config, tokens=fresh, expires_at=token_expiry(fresh.expires_in)
                ),
            )
            return fresh.access_token

    return get_token


def _client(state: AppState, iss: str, token: TokenGetter) -> FhirClient:
    settings = state.settings
    return FhirClient(
        iss,
        state.http,
        token,
        concurrency=settings.fhir_concurrency,
        max_retries=settings.fhir_max_retries,
        page_size=settings.fhir_page_size,
        max_binary_bytes=settings.max_attachment_bytes,
    )


def fhir_client_for(state: AppState, session_id: str, iss: str) -> FhirClient:
    """A client for the session's EHR, acting with the session's tokens."""
    return _client(state, iss, token_getter(state, session_id))


async def client_for_job(state: AppState, job: JobRow) -> tuple[FhirClient, str]:
    """A client for a job's EHR: as Provenote itself for the API's jobs, else with the tokens of
    the launch behind the job, and the scope it acts with."""
    if job.origin == "backend":
        return await backend_fhir_client(state, job.iss)
    context = await state.store.stored_context(job.session_id)
    if context is None:
        raise LaunchError("the job's launch session has ended; launch again from the chart")
    return fhir_client_for(state, job.session_id, job.iss), context.scope


def trusted_origins(settings: AppSettings) -> list[str]:
    """Origins the app may reach even on a non-public address: the configured EHRs, the API's
    issuer and EHR, and itself."""
    configured = [settings.api_jwks_url, settings.api_issuer, settings.api_ehr_base]
    return [*settings.ehr_origins(), settings.base_url, *(url for url in configured if url)]


def new_state(settings: AppSettings) -> AppState:
    """What a web or worker process holds: its database, sessions, outgoing HTTP, secrets."""
    private_data_dir(settings)
    database = Database(settings.database_dsn)
    http = guarded_client(trusted_origins(settings), settings.http_timeout_s)
    return AppState(
        settings=settings,
        database=database,
        store=SessionStore(
            database,
            token_cipher(settings),
            idle_s=settings.session_idle_s,
            max_s=settings.session_max_s,
        ),
        http=http,
        secret=app_secret(settings),
        styles=StyleCache(http),
    )


def job_service(
    state: AppState, queue: JobQueue, stage_hook: StageHook | None = None
) -> JobService:
    """The job service of a started process (its database migrated, its installation known)."""
    settings = state.settings
    database = state.database
    progress = PostgresProgressBus(database.engine) if database.is_postgresql else ProgressBus()

    async def client_for(job: JobRow) -> tuple[FhirClient, str]:
        return await client_for_job(state, job)

    return JobService(
        database,
        client_for,
        queue=queue,
        progress=progress,
        lease_s=settings.job_lease_s,
        forced_strategies=settings.writeback_strategies,
        stage_hook=stage_hook,
        installation=state.installation,
        inpatient_classes=settings.inpatient_classes,
        pull_bounds=PullBounds(
            window_h=get_settings().episode_window_h,
            lookback_days=settings.record_lookback_days,
            inpatient_classes=settings.inpatient_classes,
        ),
    )


def job_queue(settings: AppSettings) -> JobQueue:
    """The queue the settings name: workers in this process, or procrastinate's."""
    if settings.job_queue == "procrastinate":
        return ProcrastinateQueue(
            settings.database_dsn,
            concurrency=settings.worker_concurrency,
            heartbeat_s=settings.worker_heartbeat_s,
            stalled_after_s=settings.worker_stalled_after_s,
        )
    return InProcessQueue(settings.job_workers)


async def backend_fhir_client(state: AppState, iss: str) -> tuple[FhirClient, str]:
    """A client acting as the app itself (client_credentials), and the scope it was granted."""
    settings = state.settings
    registration = state.registration(iss)

    async def fetch(force_refresh: bool) -> str | None:
        cached = state.backend_tokens.get(iss)
        fresh_enough = cached is not None and (
            cached[2] is None or cached[2] - time.time() > settings.refresh_margin_s
        )
        if cached is not None and fresh_enough and not force_refresh:
            return cached[0]
        config = await discover(state.http, registration)
        tokens = await client_credentials(
            state.http, config, registration, state.key_for(registration), system_scopes(config)
        )
        state.backend_tokens[iss] = (
            tokens.access_token,
            tokens.scope,
            token_expiry(tokens.expires_in),
        )
        return tokens.access_token

    await fetch(False)
    return _client(state, iss, fetch), state.backend_tokens[iss][1]
