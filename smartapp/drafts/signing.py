"""Signing a reviewed draft: claim it, write the signed note to the EHR, then make it final.

The claim (status ``signing``) comes before the EHR is touched, so no edit slips in between the
EHR write and the local ``final``; if the EHR refuses, the claim is released and nothing is
signed. A claim left by a process that died is settled with the EHR (``reconcile_claim``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from fhir_mapping.draft_resources import stored_draft
from fhir_mapping.json_values import as_json
from fhir_mapping.signoff import signed_bundle
from pipeline.summarizing.summary_text import render_markdown
from smartapp.core.db import Database
from smartapp.core.metrics import DRAFTS_SIGNED, WRITE_BACKS
from smartapp.core.statuses import DRAFT_MOVES, DraftStatus, moved
from smartapp.core.tables import AuditRow, DraftRevisionRow, DraftRow, stored_utc, utcnow
from smartapp.drafts.review import (
    EhrCopyChangedError,
    EhrRefusedError,
    FlagsOpenError,
    ReviewedDraft,
    conditional_update,
    load,
    open_at,
    reviewed,
    store_revision,
)
from smartapp.drafts.store import write_back_by_key
from smartapp.drafts.writing import Write, draft_key, write_signed
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.ehr.writeback import remote_status

SIGNED_HEADING = "Discharge summary, signed by {signer} on {date}"
# A claim ends the same way whether it is released or made final: who claimed the draft, when,
# and from which session, all cleared together.
_CLAIM_ENDED: dict[str, None] = {"signing_by": None, "signing_at": None, "signing_session": None}


async def _release(database: Database, draft_id: str, practitioner: str, why: str) -> None:
    """Give a signing claim back: the draft is preliminary again, and the failure audited."""
    async with database.sessions() as session, session.begin():
        await session.execute(
            update(DraftRow)
            .where(DraftRow.id == draft_id, DraftRow.status == DraftStatus.SIGNING)
            .values(
                status=moved(DRAFT_MOVES, DraftStatus.SIGNING, DraftStatus.PRELIMINARY),
                **_CLAIM_ENDED,
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
    row.bundle = as_json(signed_bundle(stored_draft(row.bundle), practitioner, at))
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
    kept = DraftRevisionRow(
        draft_id=signed.id,
        revision=final_revision,
        status=DraftStatus.FINAL,
        bundle=signed.bundle,
        at=signed.signed_at,
    )
    event = (signed.signed_by, "signed", f"revision {final_revision}; {outcome_detail}")
    async with database.sessions() as session, session.begin():
        await store_revision(
            session,
            kept,
            (revision, DraftStatus.SIGNING),
            event,
            status=DraftStatus.FINAL,
            markdown=signed.markdown,
            signed_by=signed.signed_by,
            signed_by_name=signed.signed_by_name,
            signed_at=signed.signed_at,
            **_CLAIM_ENDED,
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
    draft = await open_at(database, draft_id, revision)
    row = draft.row
    if draft.open_flags:
        raise FlagsOpenError(
            f"{len(draft.open_flags)} flagged sentence(s) still need review: accept, edit or "
            "delete each before signing"
        )
    at = datetime.now(UTC)
    practitioner = signer.practitioner
    async with database.sessions() as session, session.begin():
        await conditional_update(
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
        claimed = stored_utc(row.signing_at) if row.signing_at else utcnow()
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
