"""The embedded SQLite database under two writers (the web process and the in-process worker):
write-ahead logged, so readers never block the writer, and a writer that finds the file locked
waits for the other instead of failing with "database is locked"."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from sqlalchemy import text

from smartapp.core.db import SQLITE_BUSY_TIMEOUT_MS, Database


def test_the_database_is_write_ahead_logged_and_its_log_is_as_private_as_the_file(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[str, int]:
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'provenote.db'}")
        try:
            await database.migrate()
            await database.installation_id()
            async with database.engine.connect() as connection:
                mode = (await connection.execute(text("PRAGMA journal_mode"))).scalar_one()
                waits = (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one()
                assert (tmp_path / "provenote.db-wal").exists()
                wal_mode = stat.S_IMODE((tmp_path / "provenote.db-wal").stat().st_mode)
                assert wal_mode == 0o600
            return str(mode), int(waits)
        finally:
            await database.dispose()

    assert asyncio.run(scenario()) == ("wal", SQLITE_BUSY_TIMEOUT_MS)


def test_a_writer_waits_for_another_writers_lock_longer_than_sqlites_default(
    tmp_path: Path,
) -> None:
    """One process holds the write lock for 6 s (longer than the 5 s sqlite3 waits by
    default); the other's write waits and lands, and a reader is never blocked meanwhile."""
    dsn = f"sqlite+aiosqlite:///{tmp_path / 'provenote.db'}"

    async def scenario() -> list[str]:
        web, worker = Database(dsn), Database(dsn)
        await web.migrate()
        try:
            async with web.engine.connect() as setup:
                await setup.execute(text("CREATE TABLE probe (who TEXT)"))
                await setup.commit()
            holding = asyncio.Event()

            async def hold_the_lock() -> None:
                async with web.engine.begin() as connection:
                    await connection.execute(text("INSERT INTO probe VALUES ('web')"))
                    holding.set()
                    await asyncio.sleep(6)

            async def write_meanwhile() -> int:
                await holding.wait()
                async with worker.engine.connect() as reader:
                    seen = (await reader.execute(text("SELECT count(*) FROM probe"))).scalar_one()
                async with worker.engine.begin() as connection:
                    await connection.execute(text("INSERT INTO probe VALUES ('worker')"))
                return int(seen)

            _, seen = await asyncio.gather(hold_the_lock(), write_meanwhile())
            assert seen == 0  # the reader saw the last commit, without waiting
            async with worker.engine.connect() as connection:
                rows = await connection.execute(text("SELECT who FROM probe ORDER BY rowid"))
                return [str(row[0]) for row in rows]
        finally:
            await web.dispose()
            await worker.dispose()

    assert asyncio.run(scenario()) == ["web", "worker"]
