"""``provenote worker``: a process that runs jobs from the procrastinate queue until stopped.

It holds what a web process holds for a job (the database, the sessions' sealed tokens, the
outgoing HTTP client, the keys) but serves no requests. CPU-heavy stages (OCR, FOCUS, model
scoring) run here, so web processes stay responsive whatever the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator

from pipeline.errors import ProvenoteError
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings
from smartapp.core.statuses import ACTIVE_JOB_STATES
from smartapp.jobs.factory import job_queue, job_service
from smartapp.jobs.predraft import Predrafting, PredraftRound
from smartapp.jobs.queue import ProcrastinateQueue
from smartapp.state import AppState, new_state


async def run_worker(settings: Settings, name: str | None = None) -> None:
    """Run jobs until SIGINT or SIGTERM; a job in hand when killed is resumed by another worker."""
    queue = job_queue(settings)
    if not isinstance(queue, ProcrastinateQueue):
        raise ProvenoteError(
            "provenote worker needs PROVENOTE_JOB_QUEUE=procrastinate and a PostgreSQL "
            "PROVENOTE_DATABASE_URL; with the in-process queue, `provenote serve` runs jobs"
        )
    state = new_state(settings)
    # The jobs table names the worker running a job as the operator named it (--name).
    worker_name = name or f"{socket.gethostname()}:{os.getpid()}"
    try:
        await state.database.prepare(settings.migrate_on_start)
        state.installation = await state.database.installation_id(settings.installation_id)
        state.jobs = job_service(
            settings,
            state.database,
            state.access,
            state.installation,
            queue,
            worker_name=worker_name,
        )
        await state.jobs.start()
        async with predraft_schedule(state):
            try:
                await queue.work(worker_name)
            finally:
                await state.jobs.stop()
    finally:
        await state.http.aclose()
        await state.database.dispose()


def predrafting(state: AppState) -> Predrafting:
    """Pre-drafting with a started process's services."""
    if state.jobs is None:
        raise RuntimeError("pre-drafting needs the job service started")
    classes = set(state.settings.inpatient_classes)
    return Predrafting(state.access, state.drafts, state.jobs, classes)


@contextlib.asynccontextmanager
async def predraft_schedule(state: AppState) -> AsyncIterator[None]:
    """Pre-drafting every ``predraft_every_s`` beside the process's work, where it is set and an
    EHR asks for it (registered with "predraft": true)."""
    settings = state.settings
    registrations = [item for item in settings.all_registrations() if item.predraft]
    if settings.predraft_every_s is None or not registrations:
        yield
        return
    rounds = asyncio.create_task(predrafting(state).every(registrations, settings.predraft_every_s))
    try:
        yield
    finally:
        rounds.cancel()
        await asyncio.gather(rounds, return_exceptions=True)


def predraft_registrations(settings: Settings, issuer: str | None) -> list[ClientRegistration]:
    """The EHR named (whether or not it asks for a schedule), else every one that asks."""
    if issuer is None:
        return [item for item in settings.all_registrations() if item.predraft]
    registration = settings.registration_for(issuer)
    if registration is None:
        raise ProvenoteError(f"{issuer} is not a registered EHR")
    return [registration]


async def run_predraft(
    settings: Settings, issuer: str | None = None, wait_s: float = 0.0
) -> list[PredraftRound]:
    """One pre-drafting round (``provenote predraft``): with the in-process queue, this process
    also runs the jobs it queued, waiting up to ``wait_s`` for them to end; with procrastinate,
    the workers run them."""
    registrations = predraft_registrations(settings, issuer)
    state = new_state(settings)
    try:
        await state.database.prepare(settings.migrate_on_start)
        state.installation = await state.database.installation_id(settings.installation_id)
        queue = job_queue(settings)
        state.jobs = job_service(settings, state.database, state.access, state.installation, queue)
        await state.jobs.start()
        try:
            rounds = [await predrafting(state).round(item) for item in registrations]
            queued = [job for done in rounds for job in done.queued_jobs]
            await _until_ended(state, queued, wait_s)
        finally:
            await state.jobs.stop()
        return rounds
    finally:
        await state.http.aclose()
        await state.database.dispose()


async def _until_ended(state: AppState, job_ids: list[str], wait_s: float) -> None:
    assert state.jobs is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    for job_id in job_ids:
        while loop.time() < deadline:
            job = await state.jobs.get(job_id)
            if job is None or job.state not in ACTIVE_JOB_STATES:
                break
            await asyncio.sleep(0.5)
