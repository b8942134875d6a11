"""One request budget per EHR, shared by every process (a token bucket), and how long the EHR
asked everyone to wait (Retry-After).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ehr_rate_limits",
        sa.Column("issuer", sa.Text, primary_key=True),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.Column("blocked_until", TIMESTAMP),
    )


def downgrade() -> None:
    op.drop_table("ehr_rate_limits")
