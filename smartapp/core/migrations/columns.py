"""What the migrations share, so that each says only what it changes: the timestamp type, the
expiry column of rows that are purged when they lapse, and columns added to or dropped from one
table. Beside ``versions/``, not in it: Alembic takes every module there for a revision."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

# Every moment is stored with its time zone (``smartapp.core.tables`` maps them so).
TIMESTAMP = sa.DateTime(timezone=True)


def expires_at() -> sa.Column[Any]:
    """When the row lapses; indexed, for the purge that deletes the lapsed rows."""
    return sa.Column("expires_at", TIMESTAMP, nullable=False, index=True)


def add_columns(table: str, *columns: sa.Column[Any]) -> None:
    """Add ``columns`` to ``table`` in batch mode, which SQLite needs to alter a table."""
    with op.batch_alter_table(table) as batch:
        for column in columns:
            batch.add_column(column)


def drop_columns(table: str, *names: str) -> None:
    """Drop the columns ``names`` from ``table`` in batch mode, in that order."""
    with op.batch_alter_table(table) as batch:
        for name in names:
            batch.drop_column(name)
