"""Drafts as stored: a new draft with its first revision and audit event, the draft of a job,
its write-back, and audit events. The review's changes and sign-off are ``drafts.review``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from pipeline.evidence import EvidenceState
from pipeline.summary import Summary
from smartapp.core.db import AuditRow, Database, DraftRevisionRow, DraftRow, WriteBackRow
from smartapp.core.statuses import DraftStatus


async def create_draft(
    database: Database,
    *,
    job_id: str,
    iss: str,
    patient: str,
    summary: Summary,
    state: EvidenceState,
    bundle: dict[str, Any],
    markdown: str,
) -> DraftRow:
    """The stay's next version, preliminary, at revision 1 (its bundle kept for version reads),
    and the audit event that says which job made it."""
    encounter = (state.encounter or "").split("/")[-1]
    async with database.sessions() as session, session.begin():
        latest = await session.scalar(
            select(func.max(DraftRow.version)).where(
                DraftRow.patient == patient, DraftRow.encounter == encounter
            )
        )
        now = datetime.now(UTC)
        draft = DraftRow(
            id=str(uuid.uuid4()),
            created_at=now,
            updated_at=now,
            job_id=job_id,
            iss=iss,
            patient=patient,
            encounter=encounter,
            version=(latest or 0) + 1,
            status=DraftStatus.PRELIMINARY,
            bundle=bundle,
            markdown=markdown,
            summary=summary.model_dump(mode="json"),
            evidence=state.model_dump(mode="json"),
            revision=1,
        )
        session.add(draft)
        await session.flush()
        session.add(
            DraftRevisionRow(
                draft_id=draft.id, revision=1, status=draft.status, bundle=bundle, at=now
            )
        )
        session.add(
            AuditRow(
                actor=f"provenote job {job_id}",
                action="draft_created",
                draft_id=draft.id,
                detail=f"version {draft.version} for Patient/{patient}",
            )
        )
    return draft


async def draft_of_job(database: Database, job_id: str) -> DraftRow | None:
    async with database.sessions() as session:
        found = await session.execute(select(DraftRow).where(DraftRow.job_id == job_id))
        return found.scalar_one_or_none()


async def write_back_of(database: Database, draft_id: str) -> WriteBackRow | None:
    async with database.sessions() as session:
        found = await session.execute(select(WriteBackRow).where(WriteBackRow.draft_id == draft_id))
        return found.scalar_one_or_none()


async def audit(database: Database, actor: str, action: str, draft_id: str, detail: str) -> None:
    async with database.sessions() as session, session.begin():
        session.add(AuditRow(actor=actor, action=action, draft_id=draft_id, detail=detail))
