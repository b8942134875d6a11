"""Hardening: pending launches in the database, session expiry, job origin and write-back
permission as columns, signing claims that can be reconciled, and the installation's id.

Revision ID: 0003
Revises: 0002
"""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "pending_launches",
        sa.Column("state", sa.String(64), primary_key=True),
        sa.Column("binding", sa.String(64), nullable=False),
        sa.Column("iss", sa.Text, nullable=False),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False, index=True),
    )
    installation = op.create_table(
        "installation",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    # Generated here, once, so that every process of this installation reads the same id.
    op.bulk_insert(installation, [{"id": uuid.uuid4().hex, "created_at": datetime.now(UTC)}])
    with op.batch_alter_table("sessions") as table:
        table.add_column(sa.Column("last_seen_at", TIMESTAMP))
    with op.batch_alter_table("jobs") as table:
        table.add_column(
            sa.Column("origin", sa.String(16), nullable=False, server_default="launch")
        )
        table.add_column(sa.Column("api_client", sa.Text))
        table.add_column(
            sa.Column("may_write", sa.Boolean, nullable=False, server_default=sa.true())
        )
    with op.batch_alter_table("drafts") as table:
        table.add_column(sa.Column("signing_by", sa.Text))
        table.add_column(sa.Column("signing_at", TIMESTAMP))
        table.add_column(sa.Column("signing_session", sa.String(64)))


def downgrade() -> None:
    with op.batch_alter_table("drafts") as table:
        for column in ("signing_session", "signing_at", "signing_by"):
            table.drop_column(column)
    with op.batch_alter_table("jobs") as table:
        for column in ("may_write", "api_client", "origin"):
            table.drop_column(column)
    with op.batch_alter_table("sessions") as table:
        table.drop_column("last_seen_at")
    op.drop_table("installation")
    op.drop_table("pending_launches")
