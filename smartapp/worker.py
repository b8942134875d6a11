"""``provenote worker``: a process that runs jobs from the procrastinate queue until stopped.

It holds what a web process holds for a job (the database, the sessions' sealed tokens, the
outgoing HTTP client, the keys) but serves no requests. CPU-heavy stages (OCR, FOCUS, model
scoring) run here, so web processes stay responsive whatever the load.
"""

from __future__ import annotations

import os
import socket

from pipeline.errors import ProvenoteError
from smartapp.core.settings import Settings
from smartapp.jobs.factory import job_queue, job_service
from smartapp.jobs.queue import ProcrastinateQueue
from smartapp.state import new_state


async def run_worker(settings: Settings, name: str | None = None) -> None:
    """Run jobs until SIGINT or SIGTERM; a job in hand when killed is resumed by another worker."""
    queue = job_queue(settings)
    if not isinstance(queue, ProcrastinateQueue):
        raise ProvenoteError(
            "provenote worker needs PROVENOTE_JOB_QUEUE=procrastinate and a PostgreSQL "
            "PROVENOTE_DATABASE_URL; with the in-process queue, `provenote serve` runs jobs"
        )
    state = new_state(settings)
    try:
        await state.database.prepare(settings.migrate_on_start)
        state.installation = await state.database.installation_id(settings.installation_id)
        state.jobs = job_service(settings, state.database, state.access, state.installation, queue)
        await state.jobs.start()
        try:
            await queue.work(name or f"{socket.gethostname()}:{os.getpid()}")
        finally:
            await state.jobs.stop()
    finally:
        await state.http.aclose()
        await state.database.dispose()
