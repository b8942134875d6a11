"""Server-side sessions: the browser holds only an opaque id; tokens are encrypted at rest.

A pending launch (state, PKCE verifier, issuer) is bound to the browser session that started it
and consumed on first use, so a replayed or foreign ``state`` is refused. Sessions are rows of the
database whose tokens are Fernet-sealed: a leaked database reveals no token without the app's key.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken
from pydantic import BaseModel

from smartapp.db import Database, SessionRow
from smartapp.oauth import SmartConfiguration, TokenResponse

PENDING_TTL_S = 600


class LaunchContext(BaseModel):
    """What the launch established: who, for which patient and encounter, on which server."""

    iss: str
    patient: str | None = None
    encounter: str | None = None
    fhir_user: str | None = None
    need_patient_banner: bool | None = None
    smart_style_url: str | None = None
    scope: str = ""


class StoredTokens(BaseModel):
    config: SmartConfiguration
    tokens: TokenResponse
    expires_at: float | None


@dataclass(slots=True)
class PendingLaunch:
    session_id: str
    iss: str
    config: SmartConfiguration
    verifier: str
    created: float


class SessionStore:
    """Pending launches in process (short-lived); sessions in the database, tokens sealed."""

    def __init__(self, database: Database, cipher: Fernet) -> None:
        self._database = database
        self._cipher = cipher
        self._lock = threading.Lock()
        self._pending: dict[str, PendingLaunch] = {}

    @staticmethod
    def new_id() -> str:
        return secrets.token_urlsafe(32)

    def add_pending(self, state: str, pending: PendingLaunch) -> None:
        with self._lock:
            self._pending[state] = pending

    def take_pending(self, state: str, session_id: str | None) -> PendingLaunch | None:
        """The launch for ``state`` if this browser session started it; it is used up either way."""
        with self._lock:
            pending = self._pending.pop(state, None)
        if pending is None or session_id is None:
            return None
        if not secrets.compare_digest(pending.session_id, session_id):
            return None
        if time.time() - pending.created > PENDING_TTL_S:
            return None
        return pending

    async def save(self, session_id: str, context: LaunchContext, tokens: StoredTokens) -> None:
        sealed = self._cipher.encrypt(tokens.model_dump_json().encode("utf-8"))
        async with self._database.sessions() as session, session.begin():
            row = await session.get(SessionRow, session_id)
            if row is None:
                session.add(
                    SessionRow(id=session_id, context=context.model_dump(), sealed_tokens=sealed)
                )
            else:
                row.context = context.model_dump()
                row.sealed_tokens = sealed

    async def _row(self, session_id: str | None) -> SessionRow | None:
        if not session_id:
            return None
        async with self._database.sessions() as session:
            return await session.get(SessionRow, session_id)

    async def context(self, session_id: str | None) -> LaunchContext | None:
        row = await self._row(session_id)
        return LaunchContext.model_validate(row.context) if row is not None else None

    async def tokens(self, session_id: str) -> StoredTokens | None:
        row = await self._row(session_id)
        if row is None:
            return None
        try:
            return StoredTokens.model_validate_json(self._cipher.decrypt(row.sealed_tokens))
        except InvalidToken:
            return None

    async def sealed(self, session_id: str) -> bytes | None:
        """The stored form of a session's tokens (what is at rest)."""
        row = await self._row(session_id)
        return row.sealed_tokens if row is not None else None
