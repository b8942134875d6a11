"""Drafts as stored: a new draft with its first revision and audit event, the draft of a job,
its write-backs, revisions, the searches of Provenote's FHIR API, and audit events. The review's
changes and sign-off are ``drafts.review``; ``drafts.service.DraftService`` is the door to both."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
from smartapp.core.db import Database
from smartapp.core.statuses import DRAFT_MOVES, DraftStatus, WriteBackStatus, moved
from smartapp.core.tables import AuditRow, DraftRevisionRow, DraftRow, WriteBackRow
from smartapp.ehr.writeback import Written


def job_actor(job_id: str) -> str:
    """How the audit trail names a job, so that what a job did is told apart from its users."""
    return f"provenote job {job_id}"


def _job_event(job_id: str, action: str, draft_id: str, detail: str) -> AuditRow:
    """An audit event of what the job ``job_id`` did to a draft."""
    return AuditRow(actor=job_actor(job_id), action=action, draft_id=draft_id, detail=detail)


def _same_stay(draft: DraftRow) -> tuple[ColumnElement[bool], ...]:
    """The conditions that select the versions of ``draft``'s stay."""
    return (
        DraftRow.iss == draft.iss,
        DraftRow.patient == draft.patient,
        DraftRow.encounter == draft.encounter,
    )


async def _supersede_open_drafts(session: AsyncSession, draft: DraftRow) -> None:
    """Every preliminary draft of the stay gives way to ``draft``, with an audit event each."""
    superseded = (
        await session.execute(
            select(DraftRow).where(
                *_same_stay(draft),
                DraftRow.status == DraftStatus.PRELIMINARY,
            )
        )
    ).scalars()
    for earlier in superseded:
        earlier.status = moved(DRAFT_MOVES, earlier.status, DraftStatus.SUPERSEDED)
        replaced = f"replaced by version {draft.version}"
        session.add(_job_event(draft.job_id, "draft_superseded", earlier.id, replaced))


@dataclass(frozen=True, slots=True)
class NewDraft:
    """What a job hands over to be stored as a draft: the job, the patient on its EHR, the
    summary and evidence review works on, and the bundle and text made of them."""

    job_id: str
    iss: str
    patient: str
    summary: Summary
    state: EvidenceState
    bundle: dict[str, Any]
    markdown: str


async def create_draft(database: Database, new: NewDraft) -> DraftRow:
    """The stay's next version, preliminary, at revision 1 (its bundle kept for version reads),
    and the audit event that says which job made it."""
    encounter = (new.state.encounter or "").split("/")[-1]
    async with database.sessions() as session, session.begin():
        latest = await session.scalar(
            select(func.max(DraftRow.version)).where(
                DraftRow.patient == new.patient, DraftRow.encounter == encounter
            )
        )
        now = datetime.now(UTC)
        draft = DraftRow(
            id=str(uuid.uuid4()),
            created_at=now,
            updated_at=now,
            job_id=new.job_id,
            iss=new.iss,
            patient=new.patient,
            encounter=encounter,
            version=(latest or 0) + 1,
            status=DraftStatus.PRELIMINARY,
            bundle=new.bundle,
            markdown=new.markdown,
            summary=new.summary.model_dump(mode="json"),
            evidence=new.state.model_dump(mode="json"),
            revision=1,
        )
        await _supersede_open_drafts(session, draft)
        session.add(draft)
        await session.flush()
        session.add(
            DraftRevisionRow(
                draft_id=draft.id, revision=1, status=draft.status, bundle=new.bundle, at=now
            )
        )
        created = f"version {draft.version} for Patient/{new.patient}"
        session.add(_job_event(new.job_id, "draft_created", draft.id, created))
    return draft


async def draft_of_job(database: Database, job_id: str) -> DraftRow | None:
    async with database.sessions() as session:
        found = await session.execute(select(DraftRow).where(DraftRow.job_id == job_id))
        return found.scalar_one_or_none()


async def latest_for_stay(
    database: Database, iss: str, patient: str, encounter: str | None
) -> DraftRow | None:
    """The newest version of a stay's draft on an EHR (without an encounter: the patient's
    newest draft, as a launch without one drafts the latest stay)."""
    selected = select(DraftRow).where(DraftRow.iss == iss, DraftRow.patient == patient)
    if encounter:
        selected = selected.where(DraftRow.encounter == encounter)
    selected = selected.order_by(DraftRow.version.desc(), DraftRow.created_at.desc()).limit(1)
    async with database.sessions() as session:
        return (await session.execute(selected)).scalar_one_or_none()


async def earlier_version(database: Database, draft: DraftRow) -> DraftRow | None:
    """The stay's version just before ``draft``, if any."""
    async with database.sessions() as session:
        found = await session.execute(
            select(DraftRow)
            .where(
                *_same_stay(draft),
                DraftRow.version < draft.version,
            )
            .order_by(DraftRow.version.desc())
            .limit(1)
        )
        return found.scalar_one_or_none()


async def signed_version(database: Database, draft: DraftRow) -> DraftRow | None:
    """A signed version of ``draft``'s stay, if one exists."""
    async with database.sessions() as session:
        found = await session.execute(
            select(DraftRow)
            .where(
                *_same_stay(draft),
                DraftRow.status.in_([DraftStatus.FINAL, DraftStatus.SIGNING]),
            )
            .limit(1)
        )
        return found.scalar_one_or_none()


async def write_back_of(database: Database, draft_id: str) -> WriteBackRow | None:
    async with database.sessions() as session:
        found = await session.execute(select(WriteBackRow).where(WriteBackRow.draft_id == draft_id))
        return found.scalar_one_or_none()


async def audit_trail(database: Database, draft_id: str) -> list[AuditRow]:
    """A draft's audit events, oldest first."""
    async with database.sessions() as session:
        found = await session.execute(
            select(AuditRow).where(AuditRow.draft_id == draft_id).order_by(AuditRow.id)
        )
        return list(found.scalars())


async def audit(
    database: Database, actor: str, action: str, draft_id: str | None, detail: str
) -> None:
    async with database.sessions() as session, session.begin():
        session.add(AuditRow(actor=actor, action=action, draft_id=draft_id, detail=detail))


async def drafts_of_jobs(database: Database, job_ids: list[str]) -> dict[str, DraftRow]:
    """The draft each of these jobs made, by job id (a job that made none is absent)."""
    async with database.sessions() as session:
        found = await session.execute(select(DraftRow).where(DraftRow.job_id.in_(job_ids)))
        return {draft.job_id: draft for draft in found.scalars()}


async def write_back_by_key(database: Database, key: str) -> WriteBackRow | None:
    async with database.sessions() as session:
        return (
            await session.execute(select(WriteBackRow).where(WriteBackRow.idempotency_key == key))
        ).scalar_one_or_none()


async def record_write_back(
    database: Database,
    draft_id: str,
    key: str,
    target: str,
    status: WriteBackStatus,
    written: Written,
) -> WriteBackRow:
    """Store the outcome of a write under its idempotency key (one row per key)."""
    async with database.sessions() as session, session.begin():
        row = (
            await session.execute(select(WriteBackRow).where(WriteBackRow.idempotency_key == key))
        ).scalar_one_or_none()
        if row is None:
            row = WriteBackRow(id=str(uuid.uuid4()), draft_id=draft_id, idempotency_key=key)
            session.add(row)
        row.target = target
        row.strategy = written.strategy
        row.status = status
        row.remote_type = written.remote_type
        row.remote_id = written.remote_id
        row.remote_version = written.remote_version
        row.error = None
    return row


async def note_record_changed(database: Database, draft_id: str, changed: bool) -> None:
    async with database.sessions() as session, session.begin():
        await session.execute(
            update(DraftRow).where(DraftRow.id == draft_id).values(record_changed=changed)
        )


async def get_draft(database: Database, draft_id: str) -> DraftRow | None:
    async with database.sessions() as session:
        return await session.get(DraftRow, draft_id)


async def revision_of(database: Database, draft_id: str, revision: int) -> DraftRevisionRow | None:
    async with database.sessions() as session:
        return await session.get(DraftRevisionRow, (draft_id, revision))


@dataclass(frozen=True, slots=True)
class DraftQuery:
    """Drafts of a patient or encounter, in some statuses; newest first."""

    patient: str | None = None
    encounter: str | None = None
    statuses: frozenset[str] = frozenset()


def _selected(query: DraftQuery) -> Select[DraftRow]:
    selected = select(DraftRow).order_by(DraftRow.created_at.desc(), DraftRow.id)
    if query.patient is not None:
        selected = selected.where(DraftRow.patient == query.patient)
    if query.encounter is not None:
        selected = selected.where(DraftRow.encounter == query.encounter)
    if query.statuses:
        selected = selected.where(DraftRow.status.in_(query.statuses))
    return selected


async def search_drafts(
    database: Database, query: DraftQuery, count: int, offset: int
) -> tuple[list[DraftRow], int]:
    """One page of the drafts ``query`` finds, and how many it finds in all (both in SQL)."""
    selected = _selected(query)
    async with database.sessions() as session:
        total = await session.scalar(
            select(func.count()).select_from(selected.order_by(None).subquery())
        )
        page = (await session.execute(selected.offset(offset).limit(count))).scalars()
        return list(page), total or 0


async def all_drafts(database: Database, query: DraftQuery) -> list[DraftRow]:
    """Every draft ``query`` finds, for filters SQL cannot apply (dates, types)."""
    async with database.sessions() as session:
        return list((await session.execute(_selected(query))).scalars())


async def draft_bundles(database: Database) -> AsyncIterator[dict[str, Any]]:
    """Every stored draft's bundle, one at a time."""
    async with database.sessions() as session:
        async for bundle in await session.stream_scalars(select(DraftRow.bundle)):
            yield bundle
