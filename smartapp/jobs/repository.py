"""The jobs table: creating, finding, claiming and leasing jobs, and moving their state.

All of a job's SQL sits here, so that the service only orders the stages. A running job holds a
lease (``lease_until``): whoever runs it renews it, and a job whose lease ran out (its process
died) is queued again by the first process that claims work, unless that process is running it
itself (a long synchronous step can hold its event loop past a short lease).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Result, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from smartapp.core.db import Database
from smartapp.core.logs import REQUEST_ID
from smartapp.core.statuses import (
    ACTIVE_JOB_STATES,
    DRAFTED_AHEAD,
    JOB_MOVES,
    JobOrigin,
    JobStage,
    JobState,
    moved,
)
from smartapp.core.tables import JobRow


def job_view(job: JobRow) -> dict[str, Any]:
    """What ``GET /jobs/{id}`` and the progress events say about a job."""
    return {
        "id": job.id,
        "patient": job.patient,
        "encounter": job.encounter,
        "state": job.state,
        "stage": job.stage,
        "progress": round(job.progress, 3),
        "detail": job.detail,
        "error": job.error,
        "attempts": job.attempts,
    }


def changed_rows(result: Result[Any]) -> int:
    """Rows an UPDATE changed (an UPDATE's result is a cursor result, typed more loosely)."""
    return cast(CursorResult[Any], result).rowcount


class JobRepository:
    """The jobs of one database, as seen by one worker process (``worker_name``)."""

    def __init__(self, database: Database, lease: timedelta, worker_name: str) -> None:
        self.database = database
        self.lease = lease
        self.worker_name = worker_name

    async def find_or_create(
        self,
        iss: str,
        patient: str,
        encounter: str | None,
        *,
        session_id: str,
        origin: JobOrigin,
        api_client: str | None,
        may_write: bool,
    ) -> tuple[JobRow, bool]:
        """The job queued or running for this stay, else a new one; and whether it is new
        (joining a running job: ``_Asker.join``)."""
        asker = _Asker(session_id, origin, api_client, may_write)
        try:
            async with self.database.sessions() as session, session.begin():
                existing = await _join_active(session, iss, patient, encounter, asker)
                if existing is not None:
                    return existing, False
                job = asker.new_job(iss, patient, encounter)
                session.add(job)
                return job, True
        except IntegrityError:
            # Another process created the stay's job between our look and our insert (the
            # database allows one active job per stay): join that one.
            async with self.database.sessions() as session, session.begin():
                existing = await _join_active(session, iss, patient, encounter, asker)
                if existing is None:
                    raise
                return existing, False

    async def latest_for(self, iss: str, patient: str, encounter: str | None) -> JobRow | None:
        """The newest job for a patient's stay on an EHR (a launch may share it)."""
        async with self.database.sessions() as session:
            found = await session.execute(
                select(JobRow)
                .where(JobRow.iss == iss, JobRow.patient == patient, JobRow.encounter == encounter)
                .order_by(JobRow.created_at.desc())
                .limit(1)
            )
            return found.scalar_one_or_none()

    async def running_for_client(self, api_client: str) -> int:
        """Jobs an API client has queued or running."""
        async with self.database.sessions() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(JobRow)
                .where(JobRow.api_client == api_client, JobRow.state.in_(ACTIVE_JOB_STATES))
            )
        return count or 0

    async def reopen_failed(self, job_id: str) -> tuple[JobRow | None, bool]:
        """The job, queued again if it had failed; and whether it was."""
        async with self.database.sessions() as session, session.begin():
            job = await session.get(JobRow, job_id)
            if job is None or job.state != JobState.FAILED:
                return job, False
            job.state, job.error = moved(JOB_MOVES, job.state, JobState.QUEUED), None
        return job, True

    async def get(self, job_id: str) -> JobRow | None:
        async with self.database.sessions() as session:
            return await session.get(JobRow, job_id)

    async def requeue_expired(self, running_here: set[str]) -> int:
        """Queue again the running jobs whose lease ran out, except those run here; how many."""
        now = datetime.now(UTC)
        async with self.database.sessions() as session, session.begin():
            result = await session.execute(
                update(JobRow)
                .where(
                    JobRow.state == JobState.RUNNING,
                    JobRow.lease_until < now,
                    JobRow.id.not_in(running_here),
                )
                .values(state=JobState.QUEUED, detail="resumed after an interrupted run")
            )
            return changed_rows(result)

    def _running_values(self) -> dict[str, Any]:
        return {
            "state": JobState.RUNNING,
            "attempts": JobRow.attempts + 1,
            "lease_until": datetime.now(UTC) + self.lease,
            "worker": self.worker_name,
        }

    async def claim_next(self) -> JobRow | None:
        """The oldest queued job, now running here under a lease; None when none is queued or
        another worker claimed it first."""
        async with self.database.sessions() as session, session.begin():
            candidate = (
                await session.execute(
                    select(JobRow.id)
                    .where(JobRow.state == JobState.QUEUED)
                    .order_by(JobRow.created_at)
                    .limit(1)
                )
            ).scalar_one_or_none()
            if candidate is None:
                return None
            claimed = await session.execute(
                update(JobRow)
                .where(JobRow.id == candidate, JobRow.state == JobState.QUEUED)
                .values(**self._running_values())
            )
            if changed_rows(claimed) != 1:
                return None
        return await self.get(candidate)

    async def take_over(self, job_id: str) -> JobRow | None:
        """The job, now running here under a lease, whether it was queued or running elsewhere
        (a queue delivered it to this worker); None when it has ended."""
        async with self.database.sessions() as session, session.begin():
            claimed = await session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.state.in_(ACTIVE_JOB_STATES))
                .values(**self._running_values())
            )
        if changed_rows(claimed) != 1:
            return None
        return await self.get(job_id)

    async def update(self, job_id: str, **values: Any) -> JobRow:
        """Set ``values`` on the job (a state only by an allowed move), renewing its lease
        unless ``lease_until`` is given."""
        values.setdefault("lease_until", datetime.now(UTC) + self.lease)
        async with self.database.sessions() as session, session.begin():
            job = await session.get(JobRow, job_id)
            assert job is not None
            if "state" in values:
                values["state"] = moved(JOB_MOVES, job.state, JobState(values["state"]))
            for name, value in values.items():
                setattr(job, name, value)
        return job

    async def renew_lease(self, job_id: str) -> None:
        async with self.database.sessions() as session, session.begin():
            await session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.state == JobState.RUNNING)
                .values(lease_until=datetime.now(UTC) + self.lease)
            )

    async def release(self, job_id: str) -> bool:
        """Give a running job back to the queue (this worker is stopping); False when it is
        no longer running here."""
        async with self.database.sessions() as session, session.begin():
            result = await session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.state == JobState.RUNNING)
                .values(
                    state=JobState.QUEUED,
                    lease_until=None,
                    detail="released by a worker that stopped; waiting for another",
                )
            )
            return changed_rows(result) == 1


async def _active_job(
    session: AsyncSession, iss: str, patient: str, encounter: str | None
) -> JobRow | None:
    """The stay's queued or running job (the database allows one)."""
    found = await session.execute(
        select(JobRow).where(
            JobRow.patient == patient,
            JobRow.encounter == encounter,
            JobRow.iss == iss,
            JobRow.state.in_(ACTIVE_JOB_STATES),
        )
    )
    return found.scalars().first()


async def _join_active(
    session: AsyncSession, iss: str, patient: str, encounter: str | None, asker: _Asker
) -> JobRow | None:
    """The stay's active job, joined by ``asker``; None when the stay has none."""
    existing = await _active_job(session, iss, patient, encounter)
    if existing is not None:
        asker.join(existing)
    return existing


@dataclass(frozen=True, slots=True)
class _Asker:
    """Who asks for a stay's job: the session it would act with, why, for which API client,
    and whether that launch may write."""

    session_id: str
    origin: JobOrigin
    api_client: str | None
    may_write: bool

    def join(self, job: JobRow) -> None:
        """A launch joining a job: one that may write lends the job its session (a job drafted
        ahead then acts for that physician); one that may not (a patient's) leaves the job as
        it is, so it never gains a right to write."""
        if self.origin == JobOrigin.LAUNCH and self.may_write:
            job.session_id, job.may_write = self.session_id, True
            if job.origin in DRAFTED_AHEAD:
                job.origin = JobOrigin.LAUNCH
        if self.api_client is not None and job.api_client is None:
            job.api_client = self.api_client

    def new_job(self, iss: str, patient: str, encounter: str | None) -> JobRow:
        """The stay's new job, queued; it writes only if its asker may (a patient's launch
        starts a job that never writes)."""
        return JobRow(
            id=str(uuid.uuid4()),
            request_id=REQUEST_ID.get(),
            session_id=self.session_id,
            iss=iss,
            patient=patient,
            encounter=encounter,
            state=JobState.QUEUED,
            stage=JobStage.QUEUED,
            progress=0.0,
            detail="waiting for a worker",
            attempts=0,
            origin=self.origin,
            api_client=self.api_client,
            may_write=self.may_write,
        )
