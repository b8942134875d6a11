"""Sessions, jobs, drafts, write-backs and audit events."""

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import TIMESTAMP

revision = "0001"
down_revision = None


def upgrade() -> None:
    _create_sessions_and_jobs()
    _create_drafts_and_their_records()


def _create_sessions_and_jobs() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("context", sa.JSON, nullable=False),
        sa.Column("sealed_tokens", sa.LargeBinary, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False, index=True),
        sa.Column("iss", sa.Text, nullable=False),
        sa.Column("patient", sa.String(128), nullable=False, index=True),
        sa.Column("encounter", sa.String(128)),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("progress", sa.Float, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("record", sa.JSON),
        sa.Column("lease_until", TIMESTAMP),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )


def _create_drafts_and_their_records() -> None:
    op.create_table(
        "drafts",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("job_id", sa.String(36), sa.ForeignKey("jobs.id"), nullable=False, unique=True),
        sa.Column("iss", sa.Text, nullable=False),
        sa.Column("patient", sa.String(128), nullable=False, index=True),
        sa.Column("encounter", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("bundle", sa.JSON, nullable=False),
        sa.Column("markdown", sa.Text, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.UniqueConstraint("patient", "encounter", "version"),
    )
    op.create_table(
        "write_backs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "draft_id", sa.String(36), sa.ForeignKey("drafts.id"), nullable=False, index=True
        ),
        sa.Column("idempotency_key", sa.String(64), nullable=False, unique=True),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("strategy", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("remote_type", sa.String(64)),
        sa.Column("remote_id", sa.String(128)),
        sa.Column("remote_version", sa.String(64)),
        sa.Column("error", sa.Text),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("draft_id", sa.String(36), index=True),
        sa.Column("detail", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for table in ("audit_events", "write_backs", "drafts", "jobs", "sessions"):
        op.drop_table(table)
