"""Scale-out and operations: which worker process runs a job; each review edit keeps the
sentence as it was (section, citations, checker verdicts) for the edits export."""

import sqlalchemy as sa

from smartapp.core.migrations.columns import add_columns, drop_columns

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    add_columns("jobs", sa.Column("worker", sa.String(128)))
    add_columns("draft_edits", sa.Column("drafted", sa.JSON))


def downgrade() -> None:
    drop_columns("draft_edits", "drafted")
    drop_columns("jobs", "worker")
