"""Two launches of one stay at the same moment, in two processes, join one job: the database
allows one queued or running job per stay on an EHR."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from smartapp.core.db import Database
from smartapp.jobs.repository import JobRepository


def test_simultaneous_launches_of_one_stay_from_two_processes_join_one_job(
    postgres_url: str,
) -> None:
    async def run() -> tuple[set[str], int, set[str]]:
        # Two engines on one database: two web processes.
        first, second = Database(postgres_url), Database(postgres_url)
        try:
            await first.migrate()
            here = JobRepository(first, timedelta(minutes=2), "web-1")
            there = JobRepository(second, timedelta(minutes=2), "web-2")

            def launch(jobs: JobRepository, stay: str | None) -> asyncio.Future[object]:
                return asyncio.ensure_future(
                    jobs.find_or_create(
                        "https://ehr.example.org/fhir",
                        "p1",
                        stay,
                        session_id="s",
                        origin="launch",
                        api_client=None,
                        may_write=True,
                    )
                )

            together = [launch(jobs, "e1") for _ in range(10) for jobs in (here, there)]
            found = await asyncio.gather(*together)
            without_encounter = await asyncio.gather(
                *(launch(jobs, None) for _ in range(5) for jobs in (here, there))
            )
            created = sum(1 for _, new in found if new)  # type: ignore[misc]
            return (
                {job.id for job, _ in found},  # type: ignore[misc]
                created,
                {job.id for job, _ in without_encounter},  # type: ignore[misc]
            )
        finally:
            await first.dispose()
            await second.dispose()

    ids, created, encounterless = asyncio.run(run())
    assert len(ids) == 1 and created == 1
    assert len(encounterless) == 1 and encounterless != ids


def test_the_rule_keeps_the_newest_of_the_duplicates_made_before_it(tmp_path: Path) -> None:
    from alembic import command
    from sqlalchemy import text

    from smartapp.core.schema import alembic_config

    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    insert = text(
        "INSERT INTO jobs (id, session_id, iss, patient, encounter, state, stage, progress,"
        " detail, attempts, origin, may_write, created_at, updated_at) VALUES (:id, 's', 'e',"
        " 'p1', 'e1', 'queued', 'queued', 0, '', 0, 'launch', 1, :at, :at)"
    )

    async def run() -> dict[str, str]:
        try:
            async with database.engine.begin() as connection:
                await connection.run_sync(
                    lambda sync: command.upgrade(alembic_config(sync), "0007")
                )
                await connection.execute(insert, {"id": "older", "at": "2026-12-01 10:00:00"})
                await connection.execute(insert, {"id": "newer", "at": "2026-12-01 11:00:00"})
            await database.migrate()
            async with database.engine.connect() as connection:
                rows = await connection.execute(text("SELECT id, state FROM jobs"))
                return {job_id: state for job_id, state in rows.all()}
        finally:
            await database.dispose()

    assert asyncio.run(run()) == {"older": "failed", "newer": "queued"}
