"""Physician review: the draft's summary and evidence, its revision, sign-off, edits and history."""

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import TIMESTAMP, add_columns, drop_columns

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    add_columns(
        "drafts",
        sa.Column("summary", sa.JSON),
        sa.Column("evidence", sa.JSON),
        sa.Column("revision", sa.Integer, nullable=False, server_default="1"),
        sa.Column("signed_by", sa.Text),
        sa.Column("signed_at", TIMESTAMP),
        sa.Column("updated_at", TIMESTAMP),
    )
    op.create_table(
        "draft_edits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "draft_id", sa.String(36), sa.ForeignKey("drafts.id"), nullable=False, index=True
        ),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("sentence_id", sa.String(128), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.Column("before", sa.Text),
        sa.Column("after", sa.Text),
        sa.Column("verdict", sa.String(16)),
    )
    op.create_table(
        "draft_revisions",
        sa.Column("draft_id", sa.String(36), sa.ForeignKey("drafts.id"), primary_key=True),
        sa.Column("revision", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("bundle", sa.JSON, nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("draft_revisions")
    op.drop_table("draft_edits")
    drop_columns(
        "drafts", "updated_at", "signed_at", "signed_by", "revision", "evidence", "summary"
    )
