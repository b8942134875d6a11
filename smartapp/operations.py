"""What orchestrators and monitoring ask: alive, ready, and the Prometheus metrics.

Both answer within about a second whatever fails: each database-backed check or gauge has its
own timeout. ``/ready`` names the dependency that failed; ``/metrics`` always serves this
process's counters, and counts a scrape whose database-backed gauges it could not read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from litestar import Controller, get
from litestar.response import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import func, select

from smartapp.core.errors import logged
from smartapp.core.metrics import INSTALLATION, JOBS, LIVE_WORKERS, OLDEST_QUEUED, SCRAPE_ERRORS
from smartapp.core.statuses import JobState
from smartapp.core.tables import JobRow, stored_utc
from smartapp.state import AppState, Provenote

T = TypeVar("T")
# Each check and the gauges' reading run at once, each within this: /ready answers within 1 s.
CHECK_TIMEOUT_S = 0.8
# Checks given up on, still finishing their own clean-up (held so they are not collected).
_ABANDONED: set[asyncio.Task[Any]] = set()


async def answered_within(work: Awaitable[T], seconds: float) -> T:
    """The result of ``work``, or TimeoutError after ``seconds``, without waiting for ``work`` to
    acknowledge its cancellation: a database driver stuck on a dead connection can take its own
    time (about 10 s) to clean up, and ``asyncio.wait_for`` would wait for it."""
    task = asyncio.ensure_future(work)
    await asyncio.wait({task}, timeout=seconds)
    if task.done():
        return task.result()
    task.cancel()
    _ABANDONED.add(task)
    task.add_done_callback(_forget)
    raise TimeoutError


def _forget(task: asyncio.Task[Any]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logged("an abandoned readiness check ended", repr(task.exception()))


async def _outcome(name: str, probe: Callable[[], Awaitable[str]]) -> str:
    """What one readiness check found: "ok", or what is wrong; a probe never raises."""
    try:
        return await answered_within(probe(), CHECK_TIMEOUT_S)
    except TimeoutError:
        logged(f"readiness check {name}", f"no answer within {CHECK_TIMEOUT_S} s")
        return "timed out"
    except Exception as failure:
        logged(f"readiness check {name} failed", repr(failure))
        return "failing"


def _probes(provenote: AppState) -> dict[str, Callable[[], Awaitable[str]]]:
    jobs = provenote.jobs

    async def database() -> str:
        return "ok" if await provenote.database.ping() else "failing"

    async def queue() -> str:
        return "ok" if jobs is not None and await jobs.ready() else "failing"

    async def workers() -> str:
        return "ok" if jobs is not None and await jobs.live_workers() > 0 else "no live worker"

    probes: dict[str, Callable[[], Awaitable[str]]] = {"database": database, "queue": queue}
    if provenote.settings.ready_requires_worker:
        probes["workers"] = workers
    return probes


async def _read_installation_gauges(provenote: AppState) -> None:
    """Jobs by state, the oldest queued job's age and the live workers, from the database."""
    async with provenote.database.sessions() as session:
        counted = await session.execute(select(JobRow.state, func.count()).group_by(JobRow.state))
        by_state = {state: count for state, count in counted.all()}
        oldest = await session.scalar(
            select(func.min(JobRow.created_at)).where(JobRow.state == JobState.QUEUED)
        )
    for name in JobState:
        JOBS.labels(name.value).set(by_state.get(name, 0))
    age = datetime.now(UTC) - stored_utc(oldest) if oldest is not None else None
    OLDEST_QUEUED.set(age.total_seconds() if age is not None else 0)
    if provenote.jobs is not None:
        LIVE_WORKERS.set(await provenote.jobs.live_workers())


class OperationsController(Controller):
    @get("/health")
    async def health(self) -> dict[str, str]:
        """Alive: the process answers (for an orchestrator's liveness probe)."""
        return {"status": "alive"}

    @get("/ready")
    async def ready(self, provenote: Provenote) -> Response[Any]:
        """Ready for traffic: its database and job queue answer (and a worker is alive, where
        the settings ask for one). The EHRs are not asked: one EHR down must not take the app
        out of a load balancer serving the others."""
        probes = _probes(provenote)
        found = await asyncio.gather(*(_outcome(name, probe) for name, probe in probes.items()))
        results = dict(zip(probes, found, strict=True))
        failing = [name for name, result in results.items() if result != "ok"]
        return Response(
            {"status": "not ready" if failing else "ready", "checks": results, "failing": failing},
            status_code=503 if failing else 200,
        )

    @get("/metrics", media_type=CONTENT_TYPE_LATEST)
    async def metrics(self, provenote: Provenote) -> Response[bytes]:
        """Prometheus exposition: this process's counters, and the installation-wide gauges read
        from the database (left as last read, and the scrape counted, when it cannot answer)."""
        try:
            await answered_within(_read_installation_gauges(provenote), CHECK_TIMEOUT_S)
        except Exception as failure:
            SCRAPE_ERRORS.inc()
            logged("reading the database-backed gauges", repr(failure))
        exposition = generate_latest() + generate_latest(INSTALLATION)
        return Response(exposition, media_type=CONTENT_TYPE_LATEST)
