"""Physician review: the draft's summary and evidence, its revision, sign-off, edits and history.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("drafts") as table:
        table.add_column(sa.Column("summary", sa.JSON))
        table.add_column(sa.Column("evidence", sa.JSON))
        table.add_column(sa.Column("revision", sa.Integer, nullable=False, server_default="1"))
        table.add_column(sa.Column("signed_by", sa.Text))
        table.add_column(sa.Column("signed_at", TIMESTAMP))
        table.add_column(sa.Column("updated_at", TIMESTAMP))
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
    with op.batch_alter_table("drafts") as table:
        for column in ("updated_at", "signed_at", "signed_by", "revision", "evidence", "summary"):
            table.drop_column(column)
