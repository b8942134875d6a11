"""Hardening: pending launches in the database, session expiry, job origin and write-back
permission as columns, signing claims that can be reconciled, and the installation's id."""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import TIMESTAMP, add_columns, drop_columns, expires_at

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "pending_launches",
        sa.Column("state", sa.String(64), primary_key=True),
        sa.Column("binding", sa.String(64), nullable=False),
        sa.Column("iss", sa.Text, nullable=False),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
        expires_at(),
    )
    installation = op.create_table(
        "installation",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    # Generated here, once, so that every process of this installation reads the same id.
    op.bulk_insert(installation, [{"id": uuid.uuid4().hex, "created_at": datetime.now(UTC)}])
    add_columns("sessions", sa.Column("last_seen_at", TIMESTAMP))
    add_columns(
        "jobs",
        sa.Column("origin", sa.String(16), nullable=False, server_default="launch"),
        sa.Column("api_client", sa.Text),
        sa.Column("may_write", sa.Boolean, nullable=False, server_default=sa.true()),
    )
    add_columns(
        "drafts",
        sa.Column("signing_by", sa.Text),
        sa.Column("signing_at", TIMESTAMP),
        sa.Column("signing_session", sa.String(64)),
    )


def downgrade() -> None:
    drop_columns("drafts", "signing_session", "signing_at", "signing_by")
    drop_columns("jobs", "may_write", "api_client", "origin")
    drop_columns("sessions", "last_seen_at")
    op.drop_table("installation")
    op.drop_table("pending_launches")
