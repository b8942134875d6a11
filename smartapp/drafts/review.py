"""Review of stored drafts: every change checked against the draft's revision.

Optimistic concurrency: a reviewer acts on the revision they saw; the change is written with a
conditional UPDATE on that revision, so of two people editing one draft the second is told the
draft moved on (``StaleDraftError``, HTTP 409) instead of silently overwriting the first. Signing
a reviewed draft is ``smartapp.drafts.signing``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import undefer

from fhir_mapping.composition import draft_bundle
from fhir_mapping.draft_resources import draft_resources, stored_draft
from fhir_mapping.json_values import as_json
from pipeline.checking.review import (
    ReviewAction,
    accept,
    awaiting_review,
    delete,
    edit,
    find_sentence,
)
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence, Summary
from pipeline.summarizing.summary_text import render_markdown
from smartapp.core.db import Database
from smartapp.core.errors import DraftStateError
from smartapp.core.statuses import DraftStatus
from smartapp.core.tables import AuditRow, DraftEditRow, DraftRevisionRow, DraftRow, utcnow


class ReviewRefusedError(DraftStateError):
    """The action is not allowed now; ``status_code`` is the HTTP answer that says why."""

    status_code = 400


class StaleDraftError(ReviewRefusedError):
    status_code = 409


class DraftClosedError(ReviewRefusedError):
    status_code = 409


class FlagsOpenError(ReviewRefusedError):
    status_code = 409


class EhrRefusedError(ReviewRefusedError):
    status_code = 502


class EhrCopyChangedError(EhrRefusedError):
    """The EHR's copy changed since Provenote wrote it (412 on ``If-Match``): nothing is
    overwritten; the next step is to read the EHR's version beside the draft."""

    status_code = 409


@dataclass(frozen=True, slots=True)
class ReviewedDraft:
    """A draft opened for review: its row, and the summary and evidence it was built from."""

    row: DraftRow
    summary: Summary
    state: EvidenceState

    @property
    def open_flags(self) -> list[Sentence]:
        return awaiting_review(self.summary)


def reviewed(row: DraftRow) -> ReviewedDraft:
    if row.summary is None or row.evidence is None:
        raise ReviewRefusedError("this draft was stored before review existed; draft it again")
    return ReviewedDraft(
        row, Summary.model_validate(row.summary), EvidenceState.model_validate(row.evidence)
    )


async def load(database: Database, draft_id: str) -> DraftRow | None:
    """The draft with the summary and evidence its review works on."""
    async with database.sessions() as session:
        return await session.get(
            DraftRow, draft_id, options=[undefer(DraftRow.summary), undefer(DraftRow.evidence)]
        )


async def open_at(database: Database, draft_id: str, revision: int) -> ReviewedDraft:
    """The draft opened for a change (an edit, a signature), if it is still open at the
    revision the reviewer saw; ReviewRefusedError if not."""
    row = await load(database, draft_id)
    if row is None:
        raise ReviewRefusedError("no such draft")
    _check_open(row, revision)
    return reviewed(row)


def _check_open(row: DraftRow, revision: int) -> None:
    if row.status != DraftStatus.PRELIMINARY:
        raise DraftClosedError(f"this draft is {row.status}; it can no longer be changed")
    if row.revision != revision:
        raise StaleDraftError(
            f"someone else changed this draft (now at revision {row.revision}, you saw "
            f"revision {revision}); reload it to see their changes before you continue"
        )


async def conditional_update(
    session: Any, draft_id: str, seen: tuple[int, str], at: datetime, **values: Any
) -> None:
    """Apply ``values`` only if the draft is still at the (revision, status) the caller saw."""
    revision, status = seen
    result = await session.execute(
        update(DraftRow)
        .where(DraftRow.id == draft_id, DraftRow.revision == revision, DraftRow.status == status)
        .values(updated_at=at, **values)
    )
    if result.rowcount != 1:
        raise StaleDraftError("someone else changed this draft just now; reload it and try again")


async def store_revision(
    session: Any,
    kept: DraftRevisionRow,
    seen: tuple[int, str],
    event: tuple[str, str, str],
    **values: Any,
) -> None:
    """Move the draft from the (revision, status) the caller saw to the revision ``kept`` (its
    number, bundle and time, and ``values``), keep that revision's bundle, and audit who made
    it and how (``event``: actor, action, detail)."""
    await conditional_update(
        session, kept.draft_id, seen, kept.at, revision=kept.revision, bundle=kept.bundle, **values
    )
    session.add(kept)
    actor, action, detail = event
    session.add(AuditRow(actor=actor, action=action, draft_id=kept.draft_id, detail=detail))


@dataclass(frozen=True, slots=True)
class SentenceReview:
    """One review action as the reviewer asked it: on which draft, at the revision they saw,
    what they did to which sentence, who they are, and the new text (an edit's)."""

    draft_id: str
    revision: int
    action: ReviewAction
    sentence_id: str
    actor: str
    text: str = ""


def _reviewed_sentence(draft: ReviewedDraft, asked: SentenceReview) -> tuple[Summary, Sentence]:
    """The summary after one review action, and the sentence as it now reads."""
    if asked.action == "accept":
        return accept(draft.summary, asked.sentence_id)
    if asked.action == "edit":
        return edit(draft.summary, asked.sentence_id, asked.text, draft.state)
    return delete(draft.summary, asked.sentence_id)


def _bundle_of(summary: Summary, draft: ReviewedDraft) -> dict[str, Any]:
    """The edited draft's bundle as stored, dated as the draft was (its sentences changed, not
    when it was generated)."""
    generated_at = draft_resources(stored_draft(draft.row.bundle)).generated_at
    return as_json(draft_bundle(summary, draft.state, generated_at))


def _edit_row(
    asked: SentenceReview, revision: int, before: Sentence, kept: Sentence | None
) -> DraftEditRow:
    """The edit as stored at ``revision``: the sentence as drafted, and as it reads after
    (None: deleted)."""
    return DraftEditRow(
        draft_id=asked.draft_id,
        revision=revision,
        sentence_id=before.id,
        action=asked.action,
        actor=asked.actor,
        before=before.text,
        after=None if kept is None else kept.text,
        verdict=None if kept is None else kept.verdict,
        drafted=before.model_dump(mode="json"),
    )


async def apply_review(
    database: Database, asked: SentenceReview
) -> tuple[DraftRow, Sentence | None]:
    """Accept, edit or delete one sentence of the revision the reviewer saw; the new row and
    sentence (None when deleted). The edit, the new revision's bundle and an audit event are
    stored."""
    draft = await open_at(database, asked.draft_id, asked.revision)
    before = find_sentence(draft.summary, asked.sentence_id)
    summary, after = _reviewed_sentence(draft, asked)
    bundle = await asyncio.to_thread(_bundle_of, summary, draft)
    markdown = render_markdown(summary, draft.state)
    kept = None if asked.action == "delete" else after
    new_revision, at = asked.revision + 1, utcnow()
    kept_revision = DraftRevisionRow(
        draft_id=asked.draft_id,
        revision=new_revision,
        status=DraftStatus.PRELIMINARY,
        bundle=bundle,
        at=at,
    )
    detail = f"{asked.sentence_id} at revision {new_revision}"
    event = (asked.actor, f"sentence_{asked.action}", detail)
    async with database.sessions() as session, session.begin():
        await store_revision(
            session,
            kept_revision,
            (asked.revision, DraftStatus.PRELIMINARY),
            event,
            summary=summary.model_dump(mode="json"),
            markdown=markdown,
        )
        session.add(_edit_row(asked, new_revision, before, kept))
    updated = await load(database, asked.draft_id)
    assert updated is not None
    return updated, kept


async def edits_of(database: Database, draft_id: str) -> list[DraftEditRow]:
    async with database.sessions() as session:
        return list(
            (
                await session.execute(
                    select(DraftEditRow)
                    .where(DraftEditRow.draft_id == draft_id)
                    .order_by(DraftEditRow.id)
                )
            ).scalars()
        )
