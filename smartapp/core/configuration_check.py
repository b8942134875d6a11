"""Everything a configuration needs before a server starts, each problem in one short paragraph.

``provenote check-config`` (the shipped units' ``ExecStartPre``), ``serve`` and ``worker`` run
these checks and report every problem they find, not the first: an operator replaying the units
by hand fixes the whole file in one pass. Each check reads, never writes: the data folder is
not created, no key is generated, the database is only asked ``SELECT 1``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from smartapp.core.deployment import deployment_problems
from smartapp.core.settings import Settings

# How long the database may take to answer check-config's ``SELECT 1``.
DATABASE_ANSWER_S = 5.0


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def data_dir_problems(settings: Settings) -> list[str]:
    """The data folder (keys, the SQLite database, converted models) must be writable, or be
    creatable in a writable folder."""
    folder = settings.data_dir.resolve()
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        return [f"PROVENOTE_DATA_DIR={folder} cannot be a folder: {existing} is a file."]
    if os.access(existing, os.W_OK | os.X_OK):
        return []
    where = "" if existing == folder else f" (it does not exist, and {existing} is not writable)"
    return [
        f"PROVENOTE_DATA_DIR={folder} cannot be written by this user{where}: Provenote keeps "
        "its keys and its SQLite database there. Set PROVENOTE_DATA_DIR to a folder the service "
        "may write (the shipped systemd units use /var/lib/provenote, their StateDirectory)."
    ]


def _fernet_problem(key: bytes, source: str) -> list[str]:
    try:
        Fernet(key)
    except ValueError:
        return [
            f"{source} is not a Fernet key (32 url-safe base64-encoded bytes): tokens at rest "
            'could be neither encrypted nor read. Generate one with `python -c "from '
            'cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`.'
        ]
    return []


def token_key_problems(settings: Settings) -> list[str]:
    """A token-encryption key that is set (or whose file exists) must be a Fernet key."""
    if settings.token_encryption_key is not None:
        key = settings.token_encryption_key.get_secret_value().encode("utf-8", "replace")
        return _fernet_problem(key, "PROVENOTE_TOKEN_ENCRYPTION_KEY")
    path = settings.token_encryption_key_file
    if path is None or not path.exists():
        return []
    try:
        key = path.read_bytes().strip()
    except OSError as error:
        return [f"PROVENOTE_TOKEN_ENCRYPTION_KEY_FILE={path} cannot be read: {error.strerror}."]
    return _fernet_problem(key, f"PROVENOTE_TOKEN_ENCRYPTION_KEY_FILE ({path})")


def registration_problems(settings: Settings) -> list[str]:
    """A server with no EHR registered refuses every launch and every hook call."""
    if settings.all_registrations():
        return []
    return [
        "No EHR is registered (PROVENOTE_REGISTRATIONS, PROVENOTE_REGISTRATIONS_FILE or "
        "PROVENOTE_ALLOWED_ISSUERS): every launch and hook call would be refused. Register each "
        "EHR that may launch Provenote (docs/configuration.md)."
    ]


async def _answers(dsn: str) -> None:
    from smartapp.core.db import Database

    database = Database(dsn)
    try:
        await asyncio.wait_for(database.ping(), DATABASE_ANSWER_S)
    finally:
        await database.dispose()


def database_problems(settings: Settings) -> list[str]:
    """A server database (not the embedded SQLite file) must answer now."""
    dsn = settings.database_dsn
    if dsn.startswith("sqlite"):
        return []
    shown = make_url(dsn).render_as_string(hide_password=True)
    try:
        asyncio.run(_answers(dsn))
    except TimeoutError:
        reason = f"no answer within {DATABASE_ANSWER_S:.0f} s"
    except Exception as failure:
        first = next(iter(str(failure).splitlines()), "")
        reason = f"{type(failure).__name__}: {first}" if first else type(failure).__name__
    else:
        return []
    return [
        f"PROVENOTE_DATABASE_URL ({shown}) cannot be reached: {reason}. Check the "
        "host, port, database name and user, and that PostgreSQL accepts this host."
    ]


def configuration_problems(settings: Settings, *, serving: bool = True) -> list[str]:
    """Every problem found, one paragraph each; empty when the configuration can work.
    ``serving``: a server that answers launches (serve, worker, check-config) also needs an
    EHR registered; migrate and purge do not."""
    return [
        *data_dir_problems(settings),
        *token_key_problems(settings),
        *(registration_problems(settings) if serving else []),
        *deployment_problems(settings),
        *database_problems(settings),
    ]
