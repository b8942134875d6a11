"""Persistence: SQLAlchemy 2 async over SQLite (default) or PostgreSQL, schema by Alembic; the
tables are ``smartapp.core.tables``."""

from __future__ import annotations

import uuid
from pathlib import Path

from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from smartapp.core.schema import SchemaNotCurrentError, revisions_of, upgrade_to_newest
from smartapp.core.tables import InstallationRow

MIGRATION_LOCK = 0x70726F6D


def libpq_dsn(sqlalchemy_dsn: str) -> str:
    """A SQLAlchemy URL (``postgresql+asyncpg://…``) as libpq, asyncpg and psycopg take it."""
    scheme, _, rest = sqlalchemy_dsn.partition("://")
    return f"{scheme.split('+')[0]}://{rest}"


def _private_sqlite_file(dsn: str) -> None:
    """The SQLite file readable by its owner only (it holds sealed tokens and patient data)."""
    if not dsn.startswith("sqlite") or ":///" not in dsn:
        return
    path = Path(dsn.split(":///", 1)[1].split("?", 1)[0])
    if path.name and path.name != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
        path.chmod(0o600)


# How long a SQLite writer waits for another's lock before "database is locked" (milliseconds):
# the web process and the in-process worker write the same file.
SQLITE_BUSY_TIMEOUT_MS = 30_000


def _sqlite_concurrency(connection: object, _record: object) -> None:
    """Write-ahead logging, so that readers never block the writer nor it them, and a busy
    timeout, so that two writers wait for each other instead of failing. SQLite creates the
    -wal and -shm files with the database file's permissions (owner only)."""
    cursor = connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


class Database:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.engine: AsyncEngine = create_async_engine(dsn, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_concurrency)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def is_postgresql(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        _private_sqlite_file(self.dsn)
        async with self.engine.begin() as connection:
            if self.is_postgresql:
                # Replicas starting together migrate one after the other (released at commit).
                await connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
            await connection.run_sync(upgrade_to_newest)

    async def revisions(self) -> tuple[str | None, str | None]:
        """(the schema's revision, or None for an empty database; this version's newest)."""
        async with self.engine.connect() as connection:
            return await connection.run_sync(revisions_of)

    async def prepare(self, migrate: bool) -> None:
        """Ready the schema as a process starts: migrate it, or (when migrations are run on
        their own, ``provenote migrate``) refuse a schema that is not this version's."""
        if migrate:
            await self.migrate()
            return
        found, newest = await self.revisions()
        if found != newest:
            raise SchemaNotCurrentError(
                f"the database schema is at revision {found or 'none (empty)'}, this version "
                f"needs {newest}: run `provenote migrate` first"
            )

    async def ping(self) -> bool:
        async with self.engine.connect() as connection:
            answer: int = (await connection.execute(text("SELECT 1"))).scalar_one()
            return answer == 1

    async def installation_id(self, configured: str | None = None) -> str:
        """This installation's id: configured, else the one stored, else a new one stored now."""
        if configured:
            return configured
        async with self.sessions() as session, session.begin():
            row = (await session.execute(select(InstallationRow))).scalars().first()
            if row is None:
                row = InstallationRow(id=uuid.uuid4().hex)
                session.add(row)
            return row.id

    async def dispose(self) -> None:
        await self.engine.dispose()
