"""CDS Hooks and pre-drafting: the JWT ids of hook calls (replays are refused by every
process), and each job's record digest (a stay whose record changed is drafted again)."""

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import add_columns, drop_columns, expires_at

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.create_table(
        "cds_hook_calls",
        sa.Column("issuer", sa.Text, primary_key=True),
        sa.Column("jti", sa.String(255), primary_key=True),
        expires_at(),
    )
    add_columns("jobs", sa.Column("record_digest", sa.String(64)))


def downgrade() -> None:
    drop_columns("jobs", "record_digest")
    op.drop_index("ix_cds_hook_calls_expires_at", "cds_hook_calls")
    op.drop_table("cds_hook_calls")
