"""Who runs a job, and where: workers in this process, or worker processes fed by procrastinate.

The embedded default needs nothing but the app's database: a few asyncio workers in the web
process claim queued job rows (a lease guards against two claims; a lease that runs out means
its process died and the job is queued again).

At scale the queue is procrastinate on the PostgreSQL the operators already run for the app's
database: web replicas defer a task per job, ``provenote worker`` processes run them (procrastinate
delivers each to one worker, wakes workers with LISTEN/NOTIFY, and tracks each worker's
heartbeat). A worker that dies mid-job stops its heartbeat; the other workers retry its stalled
jobs, and the job resumes from the last output it stored. The job row stays the source of truth
for its state; procrastinate only decides who runs it next.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Protocol

from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued

from smartapp.core.db import libpq_dsn
from smartapp.core.errors import log
from smartapp.core.metrics import JOBS_REQUEUED

TASK_NAME = "provenote.draft"
QUEUE_NAME = "provenote-drafts"
# Held while one process installs procrastinate's schema, so replicas starting together do not.
SCHEMA_LOCK = 0x70726F76


class Runner(Protocol):
    """What a queue needs from the job service."""

    async def run_next(self) -> bool:
        """Claim the oldest queued job and run it; False when there was none."""
        ...

    async def run_by_id(self, job_id: str) -> None:
        """Run this job (a queue delivered it), unless it already ended."""
        ...


class JobQueue(Protocol):
    async def start(self, runner: Runner) -> None: ...

    async def stop(self) -> None: ...

    async def enqueue(self, job_id: str) -> None: ...

    async def ready(self) -> bool:
        """Whether jobs handed to the queue now will be run."""
        ...

    async def live_workers(self) -> int:
        """Workers that have shown they are alive lately (for the whole installation where the
        queue is shared)."""
        ...


class InProcessQueue:
    """Workers in this process, polling the job table and woken when a job is added."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, runner: Runner) -> None:
        self._wake = asyncio.Event()
        self._tasks = [asyncio.create_task(self._work(runner)) for _ in range(self.workers)]

    async def stop(self) -> None:
        """Stop the workers; a job in hand goes back to the queue (JobService releases it)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def enqueue(self, job_id: str) -> None:
        self._wake.set()

    async def ready(self) -> bool:
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    async def live_workers(self) -> int:
        return sum(not task.done() for task in self._tasks)

    async def _work(self, runner: Runner) -> None:
        while True:
            try:
                ran = await runner.run_next()
            except Exception as failure:  # the database hiccuped: wait, then claim again
                log.warning("claiming a job failed: %r", failure)
                await asyncio.sleep(1.0)
                continue
            if not ran:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=0.5)


class ProcrastinateQueue:
    """Jobs deferred to procrastinate on PostgreSQL; ``work`` runs a worker in this process.

    A web replica only defers (``start`` opens the connection pool); a worker process also calls
    ``work``, which runs procrastinate's worker and sweeps stalled jobs back into the queue.
    """

    def __init__(
        self,
        dsn: str,
        *,
        concurrency: int = 2,
        heartbeat_s: float = 2.0,
        stalled_after_s: float = 10.0,
        shutdown_grace_s: float = 60.0,
        install_schema: bool = True,
    ) -> None:
        self.concurrency = concurrency
        # False (PROVENOTE_MIGRATE_ON_START=false): the tables are `provenote migrate`'s job.
        self.install_schema = install_schema
        self.shutdown_grace_s = shutdown_grace_s
        self.heartbeat_s = heartbeat_s
        self.stalled_after_s = stalled_after_s
        self.app = App(connector=PsycopgConnector(conninfo=libpq_dsn(dsn)))
        self._runner: Runner | None = None

        @self.app.task(name=TASK_NAME, queue=QUEUE_NAME)
        async def draft(job_id: str) -> None:
            assert self._runner is not None
            await self._runner.run_by_id(job_id)

        self.task = draft

    async def start(self, runner: Runner) -> None:
        self._runner = runner
        await self.app.open_async()
        if self.install_schema:
            await self.installed_schema()

    async def installed_schema(self) -> bool:
        """procrastinate's tables, once: the first process installs them while the others wait
        on a transaction-scoped lock (held by one pooled connection, released at its commit).
        Whether this call installed them. The queue must be open."""
        connector = self.app.connector
        assert isinstance(connector, PsycopgConnector)
        async with connector.pool.connection() as connection, connection.transaction():
            await connection.execute(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
            found = await connection.execute("SELECT to_regclass('procrastinate_jobs')")
            present = await found.fetchone()
            if present is None or present[0] is None:
                await self.app.schema_manager.apply_schema_async()
                return True
        return False

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[ProcrastinateQueue]:
        """The queue's connections, open for one operator's command (migrate, a start check)."""
        await self.app.open_async()
        try:
            yield self
        finally:
            await self.app.close_async()

    async def schema_present(self) -> bool:
        """Whether procrastinate's tables are there. The queue must be open."""
        answer = await self.app.connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
        )
        return bool(answer["present"])

    async def stop(self) -> None:
        await self.app.close_async()

    async def enqueue(self, job_id: str) -> None:
        # One pending delivery per job: a second submit while it waits is the same job.
        with contextlib.suppress(AlreadyEnqueued):
            await self.task.configure(queueing_lock=job_id).defer_async(job_id=job_id)

    async def ready(self) -> bool:
        """The queue's database answers (workers are separate processes, watched on their own)."""
        answer = await self.app.connector.execute_query_one_async("SELECT 1 AS alive")
        return bool(answer["alive"])

    async def live_workers(self) -> int:
        """``provenote worker`` processes whose heartbeat is younger than ``stalled_after_s``."""
        answer = await self.app.connector.execute_query_one_async(
            "SELECT count(*) AS live FROM procrastinate_workers"
            " WHERE last_heartbeat > now() - make_interval(secs => %(seconds)s)",
            seconds=self.stalled_after_s,
        )
        return int(answer["live"])

    async def work(self, name: str) -> None:
        """Run jobs until the process is told to stop (SIGINT/SIGTERM)."""
        sweeper = asyncio.create_task(self._sweep_stalled())
        try:
            await self.app.run_worker_async(
                queues=[QUEUE_NAME],
                concurrency=self.concurrency,
                name=name,
                update_heartbeat_interval=self.heartbeat_s,
                stalled_worker_timeout=self.stalled_after_s,
                # On SIGTERM: no new job; those in hand finish, or past this are cancelled and
                # go back to the queue (JobService releases them).
                shutdown_graceful_timeout=self.shutdown_grace_s,
                delete_jobs="successful",
            )
        finally:
            sweeper.cancel()
            await asyncio.gather(sweeper, return_exceptions=True)

    async def _sweep_stalled(self) -> None:
        """Jobs of workers whose heartbeat stopped (killed, frozen, lost) go back to the queue."""
        while True:
            await asyncio.sleep(self.stalled_after_s / 2)
            try:
                stalled = await self.app.job_manager.get_stalled_jobs(
                    queue=QUEUE_NAME, seconds_since_heartbeat=self.stalled_after_s
                )
                for job in stalled:
                    log.warning("retrying job %s of a stalled worker", job.task_kwargs)
                    await self.app.job_manager.retry_job(job)
                    JOBS_REQUEUED.labels("stalled_worker").inc()
            except Exception as failure:  # the sweep is tried again on the next round
                log.warning("sweeping stalled jobs failed: %r", failure)
