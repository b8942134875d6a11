"""CDS Hooks and pre-drafting: the JWT ids of hook calls (replays are refused by every
process), and each job's record digest (a stay whose record changed is drafted again).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "cds_hook_calls",
        sa.Column("issuer", sa.Text, primary_key=True),
        sa.Column("jti", sa.String(255), primary_key=True),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_cds_hook_calls_expires_at", "cds_hook_calls", ["expires_at"])
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("record_digest", sa.String(64)))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.drop_column("record_digest")
    op.drop_index("ix_cds_hook_calls_expires_at", "cds_hook_calls")
    op.drop_table("cds_hook_calls")
