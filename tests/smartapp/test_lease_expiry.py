"""A job whose worker died mid-run (its lease ran out) is queued again by the next worker that
looks for work, and counted as such in ``provenote_jobs_requeued_total{reason="lease_expired"}``:
the measure of how often workers die while drafting. A job whose lease still runs is its
worker's."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import REGISTRY
from sqlalchemy import update

from pipeline.settings import PipelineSettings
from smartapp.core.db import Database
from smartapp.core.statuses import JobOrigin, JobState
from smartapp.core.tables import JobRow
from smartapp.ehr.fhir_client import FhirClient
from smartapp.jobs.service import JobService


def requeued_for_lease() -> float:
    found = REGISTRY.get_sample_value("provenote_jobs_requeued_total", {"reason": "lease_expired"})
    return found or 0.0


def next_worker_looks(tmp_path: Path, lease_left: timedelta) -> tuple[bool, float, JobRow | None]:
    """A job running under another worker with ``lease_left`` on its lease, and a worker that
    looks for work: whether it ran one, how many lease expiries were counted, the job after."""

    async def scenario() -> tuple[bool, float, JobRow | None]:
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'provenote.db'}")
        await database.migrate()

        async def no_ehr(job: JobRow) -> tuple[FhirClient, str]:
            raise RuntimeError("this test drafts nothing")

        service = JobService(database, no_ehr, pipeline_settings=PipelineSettings())
        try:
            job, _ = await service.jobs.find_or_create(
                "https://ehr.test/fhir",
                "p1",
                "e1",
                session_id="s1",
                origin=JobOrigin.LAUNCH,
                api_client=None,
                may_write=False,
            )
            async with database.sessions() as session, session.begin():
                await session.execute(
                    update(JobRow)
                    .where(JobRow.id == job.id)
                    .values(
                        state=JobState.RUNNING,
                        lease_until=datetime.now(UTC) + lease_left,
                        worker="the other worker",
                    )
                )
            before = requeued_for_lease()
            ran = await service.run_next()
            return ran, requeued_for_lease() - before, await service.get(job.id)
        finally:
            await database.dispose()

    return asyncio.run(scenario())


def test_a_job_whose_lease_ran_out_is_queued_again_and_counted(tmp_path: Path) -> None:
    ran, counted, job = next_worker_looks(tmp_path, timedelta(seconds=-5))
    assert ran and counted == 1
    assert job is not None and job.attempts == 1 and job.worker != "the other worker"


def test_a_job_whose_lease_still_runs_is_left_to_its_worker(tmp_path: Path) -> None:
    ran, counted, job = next_worker_looks(tmp_path, timedelta(minutes=5))
    assert not ran and counted == 0
    assert job is not None and job.state == JobState.RUNNING and job.worker == "the other worker"
