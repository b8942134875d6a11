"""The request that started a job, so the job's log lines can be followed back to the launch.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("request_id", sa.String(64)))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.drop_column("request_id")
