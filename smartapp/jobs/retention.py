"""Patient data kept no longer than needed: a job's pulled FHIR record is removed once its
draft is signed, or ``record_retention_days`` after the job ended, whichever comes first.

The record is what the review's source pages and a relaunch's comparison read; after it is gone
a page image answers "no such page" and a relaunch offers "Draft again" without comparing. The
drafts (the summary and the evidence it cites) and the audit trail are kept, and every removal is
an audit event. ``provenote purge`` runs this; a schedule (cron, a systemd timer) runs that.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import null, select, update

from smartapp.core.db import Database
from smartapp.core.statuses import DraftStatus, JobState
from smartapp.core.tables import JobRow, stored_utc
from smartapp.drafts.service import DraftService
from smartapp.jobs.repository import JobRepository, changed_rows

PURGE_ACTOR = "provenote purge"


@dataclass(frozen=True, slots=True)
class Purged:
    """A job whose pulled record was removed, and why."""

    job_id: str
    draft_id: str | None
    reason: str


async def _ended_with_records(database: Database) -> list[tuple[str, datetime]]:
    """(id, when it ended) of every finished or failed job still holding its record."""
    async with database.sessions() as session:
        found = await session.execute(
            select(JobRow.id, JobRow.updated_at).where(
                JobRow.record.is_not(None),
                JobRow.state.in_([JobState.DONE, JobState.FAILED]),
            )
        )
        return [(job_id, stored_utc(ended)) for job_id, ended in found.all()]


async def _forget_record(database: Database, job_id: str) -> bool:
    """Remove an ended job's pulled record; False when it had none (or is running again)."""
    async with database.sessions() as session, session.begin():
        result = await session.execute(
            update(JobRow)
            .where(
                JobRow.id == job_id,
                JobRow.record.is_not(None),
                JobRow.state.in_([JobState.DONE, JobState.FAILED]),
            )
            .values(record=null())
            .execution_options(synchronize_session=False)
        )
        return changed_rows(result) == 1


async def purge_records(
    jobs: JobRepository,
    drafts: DraftService,
    retention_days: int,
    now: datetime,
    *,
    dry_run: bool = False,
) -> list[Purged]:
    """Remove the pulled records that are due, each with an audit event; ``dry_run`` only
    says which."""
    ended = await _ended_with_records(jobs.database)
    made = await drafts.of_jobs([job_id for job_id, _ in ended])
    cutoff = now - timedelta(days=retention_days)
    due = []
    for job_id, ended_at in ended:
        draft = made.get(job_id)
        if draft is not None and draft.status == DraftStatus.FINAL:
            due.append(Purged(job_id, draft.id, "its draft is signed"))
        elif ended_at <= cutoff:
            reason = f"the job ended more than {retention_days} days ago"
            due.append(Purged(job_id, draft.id if draft else None, reason))
    if dry_run:
        return due
    purged = []
    for item in due:
        if await _forget_record(jobs.database, item.job_id):
            detail = f"pulled record of job {item.job_id} removed: {item.reason}"
            await drafts.audit(PURGE_ACTOR, "record_purged", item.draft_id, detail)
            purged.append(item)
    return purged
