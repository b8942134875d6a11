"""Scale-out and operations: which worker process runs a job; each review edit keeps the
sentence as it was (section, citations, checker verdicts) for the edits export.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("worker", sa.String(128)))
    with op.batch_alter_table("draft_edits") as table:
        table.add_column(sa.Column("drafted", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("draft_edits") as table:
        table.drop_column("drafted")
    with op.batch_alter_table("jobs") as table:
        table.drop_column("worker")
