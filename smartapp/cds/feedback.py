"""What physicians do with the discharge card: CDS Hooks 2.0 feedback, recorded and counted.

Every card the service answers with is kept (its uuid, kind, indicator and the draft or job it
links to: ids only), so that the EHR's feedback about it (``POST {baseUrl}/cds-services/{id}/
feedback``: accepted, or overridden with a reason) can be attributed to the card the physician
saw. A feedback request is all or nothing: an entry about a card this service never gave the
calling EHR refuses the whole request (400), so nothing is recorded against the wrong card.
Counts go to ``provenote_cds_feedback_total``; a physician's free-text comment is stored, never
logged or counted.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from smartapp.cds.caller import HookRefusedError, invalid_request
from smartapp.cds.discharge import HookCard
from smartapp.core.db import Database
from smartapp.core.metrics import CDS_FEEDBACK
from smartapp.core.tables import CdsCardRow, CdsFeedbackRow

# The reasons the card offers for overriding it (CDS Hooks 2.0 ``overrideReasons``).
OVERRIDE_SYSTEM = "urn:provenote:cds:override-reason"
OVERRIDE_REASONS = {
    "writing-myself": "I will write the discharge summary myself",
    "not-needed": "No discharge summary is needed for this stay",
    "wrong-stay": "The card is about the wrong patient or stay",
    "review-later": "I will review the draft later",
}
MAX_ENTRIES = 100


class Coding(BaseModel):
    model_config = ConfigDict(extra="allow")

    system: str | None = Field(None, max_length=512)
    code: str | None = Field(None, max_length=64)
    display: str | None = Field(None, max_length=512)


class OverrideReason(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    reason: Coding | None = None
    user_comment: str | None = Field(None, alias="userComment", max_length=4000)


class FeedbackEntry(BaseModel):
    """One thing a user did with one card."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    card: UUID
    outcome: Literal["accepted", "overridden"]
    override_reason: OverrideReason | None = Field(None, alias="overrideReason")
    outcome_timestamp: datetime = Field(alias="outcomeTimestamp")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    feedback: list[FeedbackEntry] = Field(min_length=1, max_length=MAX_ENTRIES)


def parsed_feedback(body: bytes) -> FeedbackRequest:
    """The request, or a 400 that says which field is wrong (never echoing what was sent)."""
    try:
        return FeedbackRequest.model_validate_json(body)
    except ValidationError as invalid:
        raise invalid_request(invalid, "feedback") from None


async def record_card(database: Database, issuer: str, card: HookCard) -> None:
    """Keep the card the EHR is about to show, so its feedback can be attributed."""
    linked = json.loads(card.app_context)
    async with database.sessions() as session, session.begin():
        session.add(
            CdsCardRow(
                uuid=card.uuid,
                issuer=issuer,
                kind=card.kind,
                indicator=card.indicator,
                flags=card.flags,
                draft_id=linked.get("draft"),
                job_id=linked.get("job"),
            )
        )


def _reason_label(entry: FeedbackEntry) -> str:
    """The metric's reason: one of the offered codes, 'other', or 'none' (bounded labels)."""
    coding = entry.override_reason.reason if entry.override_reason else None
    if coding is None or coding.code is None:
        return "none"
    offered = coding.system == OVERRIDE_SYSTEM and coding.code in OVERRIDE_REASONS
    return coding.code if offered else "other"


async def record_feedback(database: Database, issuer: str, request: FeedbackRequest) -> int:
    """Record every entry, or none when one names a card this EHR was never given; how many."""
    uuids = {str(entry.card) for entry in request.feedback}
    async with database.sessions() as session, session.begin():
        found = await session.execute(
            select(CdsCardRow.uuid, CdsCardRow.kind).where(
                CdsCardRow.uuid.in_(uuids), CdsCardRow.issuer == issuer
            )
        )
        kinds = {uuid: kind for uuid, kind in found.all()}
        unknown = uuids - kinds.keys()
        if unknown:
            raise HookRefusedError(
                400,
                "invalid_request",
                f"{len(unknown)} of the cards named were never given to this EHR by this service",
            )
        for entry in request.feedback:
            reason = entry.override_reason.reason if entry.override_reason else None
            session.add(
                CdsFeedbackRow(
                    card_uuid=str(entry.card),
                    outcome=entry.outcome,
                    reason_system=reason.system if reason else None,
                    reason_code=reason.code if reason else None,
                    reason_display=reason.display if reason else None,
                    user_comment=entry.override_reason.user_comment
                    if entry.override_reason
                    else None,
                    outcome_at=entry.outcome_timestamp,
                )
            )
    for entry in request.feedback:
        CDS_FEEDBACK.labels(entry.outcome, kinds[str(entry.card)], _reason_label(entry)).inc()
    return len(request.feedback)
