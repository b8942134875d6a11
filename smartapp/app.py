"""The app factory: one process's state, its controllers, and what runs beside them.

Each slice brings its controllers (``launch``, ``jobs``, ``drafts``, ``api``); they are handed the
process's state by dependency injection (``provenote``), guarded where a record belongs to a
patient, and every failure goes through one handler (``smartapp.core.handlers``).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from litestar import Litestar
from litestar.static_files import create_static_files_router

import templates
from smartapp.api.auth import TokenVerifier
from smartapp.api.controllers import FhirApiController
from smartapp.api.guards import VERIFIER
from smartapp.cds.controllers import CdsController
from smartapp.core.errors import log, logged
from smartapp.core.handlers import EXCEPTION_HANDLERS
from smartapp.core.headers import security_headers
from smartapp.core.limits import DEFAULT_BODY_BYTES
from smartapp.core.logs import request_ids
from smartapp.core.settings import Settings, get_settings
from smartapp.drafts.controllers import DraftController
from smartapp.drafts.source_controllers import DraftSourceController
from smartapp.jobs.controllers import JobController, LandingController
from smartapp.jobs.factory import job_queue, job_service
from smartapp.jobs.service import StageHook
from smartapp.launch.context_controllers import LaunchContextController
from smartapp.launch.controllers import LaunchController
from smartapp.operations import OperationsController
from smartapp.state import AppState, new_state, service_dependencies
from smartapp.worker import predraft_schedule

STATIC = Path(templates.__file__).parent / "app" / "static"


async def reconcile_signatures(state: AppState) -> list[str]:
    """Claims of signatures left by a process that died are settled with the EHR, asked with
    the signer's session while it lasts; each claim's outcome."""
    outcomes = []
    for row in await state.drafts.stale_claims(state.settings.signing_timeout_s):
        session_id = row.signing_session or ""
        live = await state.store.stored_context(session_id) if session_id else None
        client = state.access.client_for(session_id, row.iss) if live else None
        outcomes.append(await state.drafts.reconcile_claim(row, client, state.installation))
    return outcomes


def _log_registrations(settings: Settings) -> None:
    """Who may launch the app, for the operator: never a secret or a key."""
    for registration in settings.all_registrations():
        log.info(
            "registered EHR %s: client id %s, %s, callback %s",
            registration.issuer,
            registration.client_id,
            registration.client_auth,
            settings.redirect_uri_for(registration.issuer),
        )


async def _sweep_signatures(state: AppState, settings: Settings) -> None:
    """Every half signing timeout (at most 30 s), the signatures a dead process left are settled."""
    while True:
        await asyncio.sleep(min(30.0, settings.signing_timeout_s / 2))
        try:
            await reconcile_signatures(state)
        except Exception as failure:  # a sweep that fails is logged and tried again
            logged("reconciling signatures", repr(failure))


def create_app(settings: Settings | None = None, stage_hook: StageHook | None = None) -> Litestar:
    """The app; ``stage_hook`` runs as each job stage starts (tests use it to interrupt a job)."""
    settings = settings or get_settings()
    state = new_state(settings)
    database = state.database

    background: list[asyncio.Task[None]] = []
    schedule = contextlib.AsyncExitStack()

    async def start_up() -> None:
        state.loop = asyncio.get_running_loop()
        _log_registrations(settings)
        await database.prepare(settings.migrate_on_start)
        state.installation = await database.installation_id(settings.installation_id)
        state.jobs = job_service(
            settings, database, state.access, state.installation, job_queue(settings), stage_hook
        )
        await state.jobs.start()
        background.append(asyncio.create_task(_sweep_signatures(state, settings)))
        if settings.job_queue == "in_process":  # this process runs the jobs it drafts ahead
            await schedule.enter_async_context(predraft_schedule(state))

    async def shut_down() -> None:
        await schedule.aclose()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if state.jobs is not None:
            await state.jobs.stop()
        await state.http.aclose()
        await database.dispose()

    app = Litestar(
        route_handlers=[
            LaunchController,
            LaunchContextController,
            LandingController,
            JobController,
            DraftController,
            DraftSourceController,
            FhirApiController,
            CdsController,
            OperationsController,
            create_static_files_router(path="/static", directories=[STATIC]),
        ],
        before_send=[security_headers(settings)],
        middleware=[request_ids],
        exception_handlers=EXCEPTION_HANDLERS,
        dependencies=service_dependencies(state),
        on_startup=[start_up],
        on_shutdown=[shut_down],
        logging_config=None,
        request_max_body_size=DEFAULT_BODY_BYTES,
    )
    app.state.provenote = state
    setattr(app.state, VERIFIER, TokenVerifier(settings, state.http))
    return app
