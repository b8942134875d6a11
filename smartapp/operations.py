"""What orchestrators and monitoring ask: alive, ready, and the Prometheus metrics."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get
from litestar.response import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import func, select

from smartapp.core.db import JobRow
from smartapp.core.errors import logged
from smartapp.core.metrics import JOBS
from smartapp.core.statuses import JobState
from smartapp.state import Provenote


class OperationsController(Controller):
    @get("/health")
    async def health(self) -> dict[str, str]:
        """Alive: the process answers (for an orchestrator's liveness probe)."""
        return {"status": "alive"}

    @get("/ready")
    async def ready(self, provenote: Provenote) -> Response[Any]:
        """Ready for traffic: its database and job queue answer. The EHRs are not asked: one
        EHR down must not take the app out of a load balancer serving the others."""
        jobs = provenote.jobs

        async def queue_ready() -> bool:
            return jobs is not None and await jobs.ready()

        checks = {"database": provenote.database.ping, "queue": queue_ready}
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
    async def metrics(self, provenote: Provenote) -> Response[bytes]:
        """Prometheus exposition: this process's counters, and jobs by state (installation-wide,
        from the database)."""
        async with provenote.database.sessions() as session:
            counted = await session.execute(
                select(JobRow.state, func.count()).group_by(JobRow.state)
            )
            by_state = {state: count for state, count in counted.all()}
        for name in JobState:
            JOBS.labels(name.value).set(by_state.get(name, 0))
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
