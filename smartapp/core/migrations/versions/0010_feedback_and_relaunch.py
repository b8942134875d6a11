"""CDS Hooks feedback: each card the discharge service answered with, and what physicians did
with it (accepted, or overridden with a reason), as the EHR reports it; and whether a draft's
record changed since it was made, as the last relaunch found it."""

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import TIMESTAMP, add_columns, drop_columns

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.create_table(
        "cds_cards",
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("issuer", sa.Text, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("indicator", sa.String(16), nullable=False),
        sa.Column("flags", sa.Integer, nullable=False),
        sa.Column("draft_id", sa.String(36)),
        sa.Column("job_id", sa.String(36)),
        sa.Column("issued_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "cds_feedback",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("card_uuid", sa.String(36), sa.ForeignKey("cds_cards.uuid"), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason_system", sa.Text),
        sa.Column("reason_code", sa.String(64)),
        sa.Column("reason_display", sa.Text),
        sa.Column("user_comment", sa.Text),
        sa.Column("outcome_at", TIMESTAMP, nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_cds_feedback_card_uuid", "cds_feedback", ["card_uuid"])
    add_columns("drafts", sa.Column("record_changed", sa.Boolean))


def downgrade() -> None:
    drop_columns("drafts", "record_changed")
    op.drop_index("ix_cds_feedback_card_uuid", "cds_feedback")
    op.drop_table("cds_feedback")
    op.drop_table("cds_cards")
