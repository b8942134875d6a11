"""The tables, as SQLAlchemy 2 rows: sessions (sealed tokens and launch context), pending
launches, the installation, jobs (state, stage, progress, error, attempts, the pulled record so a
retry continues from it), hook calls' JWT ids, drafts (the Composition bundle, version, status,
the summary and evidence it came from, its review revision and signature), draft edits (each
review action), draft revisions (the bundle at each revision), write-backs (idempotency key,
target, remote id and version, status) and audit events (who did what to which draft, when).

The schema itself is Alembic's (``smartapp/core/migrations``); ``smartapp.core.db`` connects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


def stored_utc(moment: datetime) -> datetime:
    """A time read back from the database, with its zone: SQLite returns the UTC times it
    stored without one."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar = {datetime: DateTime(timezone=True), dict: JSON}


class SessionRow(Base):
    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    context: Mapped[dict[str, Any]] = mapped_column(JSON)
    sealed_tokens: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    last_seen_at: Mapped[datetime | None] = mapped_column(default=utcnow)


class PendingLaunchRow(Base):
    """A launch between /launch and /callback: bound to the browser that started it."""

    __tablename__ = "pending_launches"

    state: Mapped[str] = mapped_column(String(64), primary_key=True)
    binding: Mapped[str] = mapped_column(String(64))
    iss: Mapped[str] = mapped_column(Text)
    # The PKCE verifier, nonce and the EHR's checked configuration, Fernet-sealed.
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class InstallationRow(Base):
    """This installation's id, generated once: part of every written note's identifier."""

    __tablename__ = "installation"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class JobRow(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    iss: Mapped[str] = mapped_column(Text)
    patient: Mapped[str] = mapped_column(String(128), index=True)
    encounter: Mapped[str | None] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(16), index=True)
    stage: Mapped[str] = mapped_column(String(32))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    detail: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The pulled record's digest (``fhir_mapping.resources.record_digest``), kept when the
    # record itself is purged: pre-drafting compares it to tell a stay whose record changed.
    record_digest: Mapped[str | None] = mapped_column(String(64))
    # "launch" (a user's launch; session_id is theirs) or "backend" (the API's $summarize,
    # run as Provenote itself for ``api_client``).
    origin: Mapped[str] = mapped_column(String(16), default="launch")
    api_client: Mapped[str | None] = mapped_column(Text)
    # False when no launch behind the job may write to the chart (e.g. a patient's).
    may_write: Mapped[bool] = mapped_column(Boolean, default=True)
    lease_until: Mapped[datetime | None] = mapped_column()
    # The process (host:pid) that last took the job.
    worker: Mapped[str | None] = mapped_column(String(128))
    # The request that started it (its log lines carry it, wherever the job runs).
    request_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class HookCallRow(Base):
    """A CDS Hooks call's JWT id, kept until the JWT expires: a replayed call is refused by
    every process (the primary key), not only by the one that saw it first."""

    __tablename__ = "cds_hook_calls"

    issuer: Mapped[str] = mapped_column(Text, primary_key=True)
    jti: Mapped[str] = mapped_column(String(255), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class CdsCardRow(Base):
    """A card the discharge service answered an EHR with: what physicians' feedback is about.
    Ids only, never patient data."""

    __tablename__ = "cds_cards"

    uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    issuer: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(16))
    indicator: Mapped[str] = mapped_column(String(16))
    flags: Mapped[int] = mapped_column(Integer, default=0)
    draft_id: Mapped[str | None] = mapped_column(String(36))
    job_id: Mapped[str | None] = mapped_column(String(36))
    issued_at: Mapped[datetime] = mapped_column(default=utcnow)


class CdsFeedbackRow(Base):
    """What a physician did with a card, as the EHR reported it (CDS Hooks feedback)."""

    __tablename__ = "cds_feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    card_uuid: Mapped[str] = mapped_column(ForeignKey("cds_cards.uuid"), index=True)
    outcome: Mapped[str] = mapped_column(String(16))
    reason_system: Mapped[str | None] = mapped_column(Text)
    reason_code: Mapped[str | None] = mapped_column(String(64))
    reason_display: Mapped[str | None] = mapped_column(Text)
    user_comment: Mapped[str | None] = mapped_column(Text)
    outcome_at: Mapped[datetime] = mapped_column()
    received_at: Mapped[datetime] = mapped_column(default=utcnow)


class DraftRow(Base):
    __tablename__ = "drafts"
    __table_args__ = (UniqueConstraint("patient", "encounter", "version"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), unique=True)
    iss: Mapped[str] = mapped_column(Text)
    patient: Mapped[str] = mapped_column(String(128), index=True)
    encounter: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    bundle: Mapped[dict[str, Any]] = mapped_column(JSON)
    markdown: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The Summary and EvidenceState the bundle was built from: review edits work on these.
    # Deferred: large, and only the review needs them (smartapp.review.load asks for them).
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, deferred=True)
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON, deferred=True)
    # Optimistic concurrency: every review action or signature bumps it (the ETag).
    revision: Mapped[int] = mapped_column(Integer, default=1)
    signed_by: Mapped[str | None] = mapped_column(Text)
    # The signer's name as the EHR's Practitioner gave it at the launch, when it could be read.
    signed_by_name: Mapped[str | None] = mapped_column(Text)
    signed_at: Mapped[datetime | None] = mapped_column()
    updated_at: Mapped[datetime | None] = mapped_column(default=utcnow)
    # The claim of a signature in progress (status ``signing``): who, since when, from which
    # session, so that a claim left by a dead process can be reconciled with the EHR.
    signing_by: Mapped[str | None] = mapped_column(Text)
    signing_at: Mapped[datetime | None] = mapped_column()
    signing_session: Mapped[str | None] = mapped_column(String(64))
    # Whether the EHR's record changed since the draft was made, as the last relaunch found it
    # (None: not asked, or the EHR could not say); every process answers the same.
    record_changed: Mapped[bool | None] = mapped_column(Boolean)


class DraftEditRow(Base):
    """One review action on one sentence: who, when, the text before and after."""

    __tablename__ = "draft_edits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    draft_id: Mapped[str] = mapped_column(ForeignKey("drafts.id"), index=True)
    revision: Mapped[int] = mapped_column(Integer)
    sentence_id: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(default=utcnow)
    before: Mapped[str | None] = mapped_column(Text)
    after: Mapped[str | None] = mapped_column(Text)
    verdict: Mapped[str | None] = mapped_column(String(16))
    # The sentence as it stood before the action: section, citations, checker verdicts, flags.
    drafted: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class DraftRevisionRow(Base):
    """The draft's bundle at each revision, for the FHIR API's version reads."""

    __tablename__ = "draft_revisions"

    draft_id: Mapped[str] = mapped_column(ForeignKey("drafts.id"), primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    bundle: Mapped[dict[str, Any]] = mapped_column(JSON)
    at: Mapped[datetime] = mapped_column(default=utcnow)


class WriteBackRow(Base):
    __tablename__ = "write_backs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    draft_id: Mapped[str] = mapped_column(ForeignKey("drafts.id"), index=True)
    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    target: Mapped[str] = mapped_column(Text)
    strategy: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    remote_type: Mapped[str | None] = mapped_column(String(64))
    remote_id: Mapped[str | None] = mapped_column(String(128))
    remote_version: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class AuditRow(Base):
    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(default=utcnow)
    actor: Mapped[str] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String(64))
    draft_id: Mapped[str | None] = mapped_column(String(36), index=True)
    detail: Mapped[str] = mapped_column(Text, default="")
