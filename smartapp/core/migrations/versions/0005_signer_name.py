"""The signer's name as the EHR gave it, so the draft shows who signed by name."""

import sqlalchemy as sa

from smartapp.core.migrations.columns import add_columns, drop_columns

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    add_columns("drafts", sa.Column("signed_by_name", sa.Text))


def downgrade() -> None:
    drop_columns("drafts", "signed_by_name")
