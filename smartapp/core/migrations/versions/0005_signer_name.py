"""The signer's name as the EHR gave it, so the draft shows who signed by name.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    with op.batch_alter_table("drafts") as table:
        table.add_column(sa.Column("signed_by_name", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("drafts") as table:
        table.drop_column("signed_by_name")
