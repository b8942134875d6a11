"""What a running process holds: its settings, database, sessions, outgoing HTTP, access to the
EHRs and the job service. Built once at start-up (``new_state``) and handed to the controllers
and services that need a part of it."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import httpx
from litestar.di import NamedDependency, Provide

from smartapp.access.sessions import SessionStore
from smartapp.access.tokens import EhrAccess
from smartapp.cds.caller import HookKeys
from smartapp.core.db import Database
from smartapp.core.keys import app_secret, private_data_dir, token_cipher
from smartapp.core.settings import Settings
from smartapp.drafts.page_images import PageImages
from smartapp.drafts.service import DraftService
from smartapp.ehr.egress import guarded_client
from smartapp.jobs.service import JobService
from smartapp.launch.style import StyleCache

SESSION_COOKIE = "provenote_session"
# Over HTTPS the cookie is host-only, secure and path-wide, which the prefix makes the browser
# enforce (no subdomain can set or shadow it).
SECURE_SESSION_COOKIE = "__Host-provenote_session"
# The binding between /launch and /callback: which browser started the pending launch.
LAUNCH_COOKIE = "provenote_launch"
SECURE_LAUNCH_COOKIE = "__Host-provenote_launch"


@dataclass(slots=True)
class AppState:
    settings: Settings
    database: Database
    store: SessionStore
    http: httpx.AsyncClient
    # The secret CSRF tokens are derived from (smartapp.core.keys.app_secret).
    secret: bytes
    styles: StyleCache
    access: EhrAccess
    drafts: DraftService
    # The registered EHRs' CDS Hooks keys, fetched as calls need them.
    hook_keys: HookKeys
    jobs: JobService | None = None
    loop: asyncio.AbstractEventLoop | None = None
    installation: str = ""
    # Open progress streams per browser session (capped: settings.max_event_streams).
    event_streams: Counter[str] = field(default_factory=Counter)
    # When each session last pulled its record through /api/record (rate-limited).
    record_pulls: dict[str, list[float]] = field(default_factory=dict)
    # The work under way beside launches: asking whether a draft's record changed, and writing a
    # draft made ahead as it is first opened.
    record_checks: set[asyncio.Task[None]] = field(default_factory=set)
    # The source pane's page images, rendered a few at a time and kept.
    page_images: PageImages = field(default_factory=PageImages)
    # Set when the process is told to stop (SIGTERM): progress streams end with "reconnect".
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def session_cookie(self) -> str:
        return SECURE_SESSION_COOKIE if self.settings.https else SESSION_COOKIE

    @property
    def launch_cookie(self) -> str:
        return SECURE_LAUNCH_COOKIE if self.settings.https else LAUNCH_COOKIE


# What a controller declares to be handed the process's state, or one of its services, by the
# parameter's name (``create_app`` provides them: ``service_dependencies``).
Provenote = NamedDependency[AppState]
AppSettings = NamedDependency[Settings]
Drafts = NamedDependency[DraftService]
Jobs = NamedDependency[JobService]
Access = NamedDependency[EhrAccess]


def service_dependencies(state: AppState) -> dict[str, Provide]:
    """Each service a handler may ask for by name. The job service exists once the app has
    started, so a handler that asks for it always gets one (no handler checks for None)."""

    def jobs() -> JobService:
        if state.jobs is None:
            raise RuntimeError("the job service starts with the app")
        return state.jobs

    return {
        "provenote": Provide(lambda: state, sync_to_thread=False),
        "settings": Provide(lambda: state.settings, sync_to_thread=False),
        "drafts": Provide(lambda: state.drafts, sync_to_thread=False),
        "access": Provide(lambda: state.access, sync_to_thread=False),
        "jobs": Provide(jobs, sync_to_thread=False),
    }


def trusted_origins(settings: Settings) -> list[str]:
    """Origins the app may reach even on a non-public address: the configured EHRs, the API's
    issuer and EHR, and itself."""
    configured = [settings.api_jwks_url, settings.api_issuer, settings.api_ehr_base]
    return [*settings.ehr_origins(), settings.base_url, *(url for url in configured if url)]


def new_state(settings: Settings) -> AppState:
    """What a web or worker process holds: its database, sessions, outgoing HTTP, secrets."""
    private_data_dir(settings)
    database = Database(settings.database_dsn)
    http = guarded_client(trusted_origins(settings), settings.http_timeout_s, settings.ca_bundle)
    store = SessionStore(
        database,
        token_cipher(settings),
        idle_s=settings.session_idle_s,
        max_s=settings.session_max_s,
    )
    return AppState(
        settings=settings,
        database=database,
        store=store,
        http=http,
        secret=app_secret(settings),
        styles=StyleCache(http),
        access=EhrAccess(settings, store, http, database),
        drafts=DraftService(database),
        hook_keys=HookKeys(http, settings),
    )
