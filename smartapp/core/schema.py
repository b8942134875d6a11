"""The database schema's migrations (Alembic, in ``migrations/``): bringing a schema to this
version's, and reading at which revision it is."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from pipeline.errors import ProvenoteError

MIGRATIONS = Path(__file__).parent / "migrations"


class SchemaNotCurrentError(ProvenoteError):
    """The schema is not the one this version runs on, and this process may not migrate it."""

    status_code = 500


def alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def upgrade_to_newest(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


def revisions_of(connection: Connection) -> tuple[str | None, str | None]:
    """(the database's schema revision, this version's newest)."""
    newest = ScriptDirectory.from_config(alembic_config(connection)).get_current_head()
    return MigrationContext.configure(connection).get_current_revision(), newest
