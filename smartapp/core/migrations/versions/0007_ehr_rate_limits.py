"""One request budget per EHR, shared by every process (a token bucket), and how long the EHR
asked everyone to wait (Retry-After)."""

import sqlalchemy as sa
from alembic import op

from smartapp.core.migrations.columns import TIMESTAMP

revision = "0007"
down_revision = "0006"


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
