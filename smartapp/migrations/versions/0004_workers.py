"""Scale-out: which worker process runs a job.

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


def downgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.drop_column("worker")
