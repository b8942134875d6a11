"""The request that started a job, so the job's log lines can be followed back to the launch."""

import sqlalchemy as sa

from smartapp.core.migrations.columns import add_columns, drop_columns

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    add_columns("jobs", sa.Column("request_id", sa.String(64)))


def downgrade() -> None:
    drop_columns("jobs", "request_id")
