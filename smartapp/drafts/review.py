"""Review and sign-off of stored drafts: every change checked against the draft's revision.

Optimistic concurrency: a reviewer acts on the revision they saw; the change is written with a
conditional UPDATE on that revision, so of two people editing one draft the second is told the
draft moved on (``StaleDraftError``, HTTP 409) instead of silently overwriting the first. Signing
claims the draft (status ``signing``) before touching the EHR, so no edit slips in between the
EHR write and the local ``final``; if the EHR refuses, the claim is released and nothing is signed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import undefer

from fhir_mapping.composition import draft_bundle
from fhir_mapping.draft_resources import draft_resources
from fhir_mapping.signoff import signed_bundle
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
from smartapp.core.db import AuditRow, Database, DraftEditRow, DraftRevisionRow, DraftRow, utcnow
from smartapp.core.errors import DraftStateError
from smartapp.core.metrics import DRAFTS_SIGNED, WRITE_BACKS
from smartapp.core.statuses import DRAFT_MOVES, DraftStatus, moved
from smartapp.drafts.store import write_back_by_key
from smartapp.drafts.writing import Write, draft_key, write_signed
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.ehr.writeback import remote_status

SIGNED_HEADING = "Discharge summary, signed by {signer} on {date}"


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


def _check_open(row: DraftRow, revision: int) -> None:
    if row.status != DraftStatus.PRELIMINARY:
        raise DraftClosedError(f"this draft is {row.status}; it can no longer be changed")
    if row.revision != revision:
        raise StaleDraftError(
            f"someone else changed this draft (now at revision {row.revision}, you saw "
            f"revision {revision}); reload it to see their changes before you continue"
        )


async def _conditional_update(
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


def _add_revision(
    session: Any, revision: DraftRevisionRow, actor: str, action: str, detail: str
) -> None:
    """Keep the bundle of a new revision, and audit who made it and how."""
    session.add(revision)
    session.add(AuditRow(actor=actor, action=action, draft_id=revision.draft_id, detail=detail))


def _reviewed_sentence(
    draft: ReviewedDraft, action: ReviewAction, sentence_id: str, text: str
) -> tuple[Summary, Sentence]:
    """The summary after one review action, and the sentence as it now reads."""
    if action == "accept":
        return accept(draft.summary, sentence_id)
    if action == "edit":
        return edit(draft.summary, sentence_id, text, draft.state)
    return delete(draft.summary, sentence_id)


def _edit_row(
    draft_id: str,
    revision: int,
    action: ReviewAction,
    actor: str,
    before: Sentence,
    kept: Sentence | None,
) -> DraftEditRow:
    """The edit as stored: the sentence as drafted, and as it reads after (None: deleted)."""
    return DraftEditRow(
        draft_id=draft_id,
        revision=revision,
        sentence_id=before.id,
        action=action,
        actor=actor,
        before=before.text,
        after=None if kept is None else kept.text,
        verdict=None if kept is None else kept.verdict,
        drafted=before.model_dump(mode="json"),
    )


async def apply_review(
    database: Database,
    draft_id: str,
    revision: int,
    action: ReviewAction,
    sentence_id: str,
    actor: str,
    text: str = "",
) -> tuple[DraftRow, Sentence | None]:
    """Accept, edit or delete one sentence of revision ``revision``; the new row and sentence
    (None when deleted). The edit, the new revision's bundle and an audit event are stored."""
    row = await load(database, draft_id)
    if row is None:
        raise ReviewRefusedError("no such draft")
    _check_open(row, revision)
    draft = reviewed(row)
    before = find_sentence(draft.summary, sentence_id)
    summary, after = _reviewed_sentence(draft, action, sentence_id, text)
    bundle = await asyncio.to_thread(
        draft_bundle, summary, draft.state, draft_resources(draft.row.bundle).generated_at
    )
    markdown = render_markdown(summary, draft.state)
    kept = None if action == "delete" else after
    new_revision, at = revision + 1, utcnow()
    async with database.sessions() as session, session.begin():
        await _conditional_update(
            session,
            draft_id,
            (revision, DraftStatus.PRELIMINARY),
            at,
            revision=new_revision,
            summary=summary.model_dump(mode="json"),
            bundle=bundle,
            markdown=markdown,
        )
        session.add(_edit_row(draft_id, new_revision, action, actor, before, kept))
        _add_revision(
            session,
            DraftRevisionRow(
                draft_id=draft_id,
                revision=new_revision,
                status=DraftStatus.PRELIMINARY,
                bundle=bundle,
                at=at,
            ),
            actor,
            f"sentence_{action}",
            f"{sentence_id} at revision {new_revision}",
        )
    updated = await load(database, draft_id)
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


async def _release(database: Database, draft_id: str, practitioner: str, why: str) -> None:
    """Give a signing claim back: the draft is preliminary again, and the failure audited."""
    async with database.sessions() as session, session.begin():
        await session.execute(
            update(DraftRow)
            .where(DraftRow.id == draft_id, DraftRow.status == DraftStatus.SIGNING)
            .values(
                status=moved(DRAFT_MOVES, DraftStatus.SIGNING, DraftStatus.PRELIMINARY),
                signing_by=None,
                signing_at=None,
                signing_session=None,
            )
        )
        session.add(
            AuditRow(actor=practitioner, action="sign_failed", draft_id=draft_id, detail=why)
        )


@dataclass(frozen=True, slots=True)
class Signer:
    """Who signs: the practitioner's reference, their session and its granted scopes."""

    practitioner: str
    session_id: str
    scope: str
    # The practitioner's name, when the launch could read it.
    name: str | None = None


def signer_label(practitioner: str, name: str | None) -> str:
    """Who signed, for people: the name with the reference, or the reference alone."""
    return f"{name} ({practitioner})" if name else practitioner


def signed_note(
    draft: ReviewedDraft, practitioner: str, at: datetime, name: str | None = None
) -> str:
    """The note's text once signed, as the EHR is sent it (and as the sign-off shows it)."""
    signer = signer_label(practitioner, name)
    heading = SIGNED_HEADING.format(signer=signer, date=at.date().isoformat())
    return render_markdown(draft.summary, draft.state, heading)


def _as_signed(row: DraftRow, draft: ReviewedDraft, signer: Signer, at: datetime) -> DraftRow:
    """``row`` (a detached snapshot) shaped as signed: what the EHR is sent and then kept."""
    practitioner = signer.practitioner
    row.bundle = signed_bundle(row.bundle, practitioner, at)
    row.markdown = signed_note(draft, practitioner, at, signer.name)
    row.signed_by, row.signed_at = practitioner, at
    row.signed_by_name = signer.name
    row.status = moved(DRAFT_MOVES, DraftStatus.SIGNING, DraftStatus.FINAL)
    return row


async def _finish_signature(
    database: Database, signed: DraftRow, revision: int, outcome_detail: str
) -> None:
    """Make the claimed draft final here, once the EHR has its signed copy."""
    final_revision = revision + 1
    assert signed.signed_by is not None and signed.signed_at is not None
    async with database.sessions() as session, session.begin():
        await _conditional_update(
            session,
            signed.id,
            (revision, DraftStatus.SIGNING),
            signed.signed_at,
            status=DraftStatus.FINAL,
            revision=final_revision,
            bundle=signed.bundle,
            markdown=signed.markdown,
            signed_by=signed.signed_by,
            signed_by_name=signed.signed_by_name,
            signed_at=signed.signed_at,
            signing_by=None,
            signing_at=None,
            signing_session=None,
        )
        _add_revision(
            session,
            DraftRevisionRow(
                draft_id=signed.id,
                revision=final_revision,
                status=DraftStatus.FINAL,
                bundle=signed.bundle,
                at=signed.signed_at,
            ),
            signed.signed_by,
            "signed",
            f"revision {final_revision}; {outcome_detail}",
        )


async def sign(
    database: Database,
    client: FhirClient,
    draft_id: str,
    revision: int,
    signer: Signer,
    write: Write,
) -> DraftRow:
    """Sign revision ``revision`` as the signer: final, attested, the EHR copy updated."""
    row = await load(database, draft_id)
    if row is None:
        raise ReviewRefusedError("no such draft")
    _check_open(row, revision)
    draft = reviewed(row)
    if draft.open_flags:
        raise FlagsOpenError(
            f"{len(draft.open_flags)} flagged sentence(s) still need review: accept, edit or "
            "delete each before signing"
        )
    at = datetime.now(UTC)
    practitioner = signer.practitioner
    async with database.sessions() as session, session.begin():
        await _conditional_update(
            session,
            draft_id,
            (revision, DraftStatus.PRELIMINARY),
            row.updated_at or utcnow(),
            status=moved(DRAFT_MOVES, row.status, DraftStatus.SIGNING),
            signing_by=practitioner,
            signing_at=at,
            signing_session=signer.session_id,
        )
    signed = _as_signed(row, draft, signer, at)
    try:
        outcome = await write_signed(database, client, signed, signer.scope, write)
    except FhirError as failure:
        await _release(database, draft_id, practitioner, str(failure))
        if failure.status == 412:
            raise EhrCopyChangedError(
                "The EHR's copy of this note changed since Provenote wrote it (someone edited "
                "it in the EHR), so nothing was overwritten and nothing was signed. Open the "
                "EHR's version beside the draft, carry over what it needs, then sign again."
            ) from failure
        raise EhrRefusedError(
            f"The EHR did not take the signed summary: {failure}. Nothing was signed."
        ) from failure
    except BaseException as failure:  # whatever stops the signature must not leave the claim
        await _release(database, draft_id, practitioner, repr(failure))
        raise
    WRITE_BACKS.labels(outcome.strategy, outcome.status).inc()
    remote = f"{outcome.remote_type}/{outcome.remote_id}" if outcome.remote_id else "no copy"
    await _finish_signature(database, signed, revision, f"EHR {outcome.strategy}: {remote}")
    DRAFTS_SIGNED.inc()
    final = await load(database, draft_id)
    assert final is not None
    return final


async def reconcile_claim(
    database: Database, row: DraftRow, client: FhirClient | None, installation: str
) -> str:
    """Settle one claim left ``signing`` by a process that died: the EHR's copy decides.
    Final there means final here; otherwise (or when the EHR cannot be asked) the claim is
    released. Audited either way; the outcome, in words."""
    practitioner = row.signing_by or "unknown signer"
    written = await write_back_by_key(database, draft_key(row, installation))
    remote = None
    if client is not None and written is not None and written.remote_type and written.remote_id:
        try:
            remote = await remote_status(client, written.remote_type, written.remote_id)
        except FhirError as failure:
            remote = f"unknown ({failure})"
    if remote == "final":
        full = await load(database, row.id)
        assert full is not None
        claimed = row.signing_at or utcnow()
        if claimed.tzinfo is None:  # SQLite returns stored UTC times without a zone
            claimed = claimed.replace(tzinfo=UTC)
        signer = Signer(practitioner, row.signing_session or "", "")
        signed = _as_signed(full, reviewed(full), signer, claimed)
        await _finish_signature(
            database, signed, row.revision, "reconciled: the EHR's copy is final"
        )
        return "final"
    why = (
        f"signing did not finish (its process stopped); the EHR's copy is {remote}"
        if remote
        else "signing did not finish (its process stopped); the EHR could not be asked"
    )
    await _release(database, row.id, practitioner, why)
    return "released"


async def stale_claims(database: Database, timeout_s: float) -> list[DraftRow]:
    cutoff = utcnow() - timedelta(seconds=timeout_s)
    async with database.sessions() as session:
        return list(
            (
                await session.execute(
                    select(DraftRow).where(
                        DraftRow.status == DraftStatus.SIGNING, DraftRow.signing_at < cutoff
                    )
                )
            ).scalars()
        )
