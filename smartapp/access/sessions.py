"""Server-side sessions: the browser holds only an opaque id; tokens are encrypted at rest.

A pending launch (state, PKCE verifier, nonce, the EHR's checked configuration) is a database row
bound to the browser that started it (a fresh binding id in its cookie) and consumed on first use,
so a replayed or foreign ``state`` is refused, and the callback may land on any process. Every
launch ends in a new session whose id the server generated at the callback: a cookie the browser
brought is never adopted. Sessions expire after an idle and an absolute limit, and can be ended.
Tokens are Fernet-sealed: a leaked database reveals no token without the app's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from cryptography.fernet import Fernet, InvalidToken
from pydantic import BaseModel
from sqlalchemy import delete, text, update

from smartapp.access.discovery import SmartConfiguration
from smartapp.access.oauth import TokenResponse
from smartapp.core.db import Database
from smartapp.core.tables import PendingLaunchRow, SessionRow, stored_utc, utcnow

PENDING_TTL_S = 600
# A session's last-seen time is written at most this often (not on every request).
TOUCH_INTERVAL_S = 60


class LaunchContext(BaseModel):
    """What the launch established: who, for which patient and encounter, on which server."""

    iss: str
    patient: str | None = None
    encounter: str | None = None
    fhir_user: str | None = None
    # The user's name as their fhirUser resource gives it (shown as the signer).
    user_name: str | None = None
    need_patient_banner: bool | None = None
    smart_style_url: str | None = None
    scope: str = ""
    # When the EHR's grant ends (epoch seconds): the access token's expiry where no refresh
    # token came with it. The session ends then, whatever its own limits say.
    grant_ends_at: float | None = None
    # What the EHR launched the app for, when a CDS Hooks card's link said (its ``appContext``:
    # the draft or job the card was about).
    app_context: str | None = None


class StoredTokens(BaseModel):
    # None: a token a CDS hook handed over (fhirAuthorization), which is never refreshed.
    config: SmartConfiguration | None
    tokens: TokenResponse
    expires_at: float | None


class PendingLaunch(BaseModel):
    """What /callback needs from /launch; sealed at rest (the verifier is a secret)."""

    iss: str
    config: SmartConfiguration
    verifier: str
    nonce: str
    # The EHR's launch parameter, to offer the launch again in a window of its own when the
    # browser refused the binding cookie inside the EHR's frame.
    launch: str | None = None


@dataclass(frozen=True, slots=True)
class Taken:
    """A pending launch taken at the callback, or why there is none: ``cookie_missing`` says
    the state is genuine but the browser sent no binding cookie (one that blocks cookies in
    another site's frame), rather than a forged or replayed state."""

    pending: PendingLaunch | None
    cookie_missing: bool = False
    launch_url: str | None = None


def _launch_again(pending: PendingLaunch) -> str | None:
    """The app's own launch URL for this EHR launch, to open in a window of its own."""
    if not pending.launch:
        return None
    return f"/launch?{urlencode({'iss': pending.iss, 'launch': pending.launch})}"


class SessionStore:
    """Pending launches and sessions, both in the database; tokens and verifiers sealed."""

    def __init__(self, database: Database, cipher: Fernet, *, idle_s: float, max_s: float) -> None:
        self._database = database
        self._cipher = cipher
        self.idle = timedelta(seconds=idle_s)
        self.lifetime = timedelta(seconds=max_s)
        self._refreshing: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def refresh_lock(self, session_id: str) -> AsyncIterator[None]:
        """Held while a session's tokens are refreshed, by one task of one process at a time:
        an EHR's refresh token is often single-use, so a second refresh with it would fail and
        end the session. Across processes it is a PostgreSQL advisory lock on the session."""
        local = self._refreshing.setdefault(session_id, asyncio.Lock())
        async with local:
            if not self._database.is_postgresql:
                yield
                return
            key = {"key": f"provenote-refresh:{session_id}"}
            async with self._database.engine.connect() as connection:
                await connection.execute(
                    text("SELECT pg_advisory_lock(hashtextextended(:key, 0))"), key
                )
                try:
                    yield
                finally:
                    await connection.execute(
                        text("SELECT pg_advisory_unlock(hashtextextended(:key, 0))"), key
                    )
                    await connection.commit()

    @staticmethod
    def new_id() -> str:
        return secrets.token_urlsafe(32)

    # --- pending launches -------------------------------------------------------------------------

    async def add_pending(self, state: str, binding: str, pending: PendingLaunch) -> None:
        """Keep a launch until its callback; expired ones are purged on the way."""
        now = utcnow()
        sealed = self._cipher.encrypt(pending.model_dump_json().encode("utf-8"))
        async with self._database.sessions() as session, session.begin():
            await session.execute(delete(PendingLaunchRow).where(PendingLaunchRow.expires_at < now))
            session.add(
                PendingLaunchRow(
                    state=state,
                    binding=binding,
                    iss=pending.iss,
                    sealed=sealed,
                    expires_at=now + timedelta(seconds=PENDING_TTL_S),
                )
            )

    async def take_pending(self, state: str, binding: str | None) -> Taken:
        """The launch for ``state`` if this browser started it and it has not expired; it is
        used up either way (deleted in the same transaction that reads it)."""
        if not state:
            return Taken(None)
        async with self._database.sessions() as session, session.begin():
            row = await session.get(PendingLaunchRow, state)
            if row is None:
                return Taken(None)
            await session.delete(row)
        if stored_utc(row.expires_at) < utcnow():
            return Taken(None)
        try:
            pending = PendingLaunch.model_validate_json(self._cipher.decrypt(row.sealed))
        except InvalidToken:
            return Taken(None)
        if binding is None:
            return Taken(None, cookie_missing=True, launch_url=_launch_again(pending))
        if not secrets.compare_digest(row.binding, binding):
            return Taken(None)
        return Taken(pending)

    # --- sessions ---------------------------------------------------------------------------------

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

    async def update_context(self, session_id: str, context: LaunchContext) -> None:
        """The session's launch context, completed after the callback (its tokens unchanged)."""
        async with self._database.sessions() as session, session.begin():
            await session.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id)
                .values(context=context.model_dump())
            )

    def _expired(self, row: SessionRow, now: datetime) -> bool:
        seen = stored_utc(row.last_seen_at or row.updated_at or row.created_at)
        grant_ends = row.context.get("grant_ends_at") if isinstance(row.context, dict) else None
        if isinstance(grant_ends, int | float) and grant_ends < time.time():
            return True
        return now - stored_utc(row.created_at) > self.lifetime or now - seen > self.idle

    async def end_grant(self, session_id: str) -> None:
        """The EHR's grant is over (a refresh was refused): the session ends with it."""
        async with self._database.sessions() as session, session.begin():
            row = await session.get(SessionRow, session_id)
            if row is not None:
                row.context = row.context | {"grant_ends_at": time.time() - 1}

    async def _row(self, session_id: str | None, *, touch: bool = False) -> SessionRow | None:
        """The live session; an expired one is deleted and is no session."""
        if not session_id:
            return None
        now = utcnow()
        async with self._database.sessions() as session, session.begin():
            row = await session.get(SessionRow, session_id)
            if row is None:
                return None
            if self._expired(row, now):
                await session.delete(row)
                return None
            seen = stored_utc(row.last_seen_at or row.created_at)
            interval = min(TOUCH_INTERVAL_S, self.idle.total_seconds() / 4)
            if touch and (now - seen).total_seconds() > interval:
                await session.execute(
                    update(SessionRow).where(SessionRow.id == session_id).values(last_seen_at=now)
                )
        return row

    async def context(self, session_id: str | None) -> LaunchContext | None:
        """The launch context of a live session (a user's request keeps it alive)."""
        row = await self._row(session_id, touch=True)
        return LaunchContext.model_validate(row.context) if row is not None else None

    async def stored_context(self, session_id: str) -> LaunchContext | None:
        """The launch context as stored, for work the app does on the session's behalf."""
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

    async def end(self, session_id: str | None) -> None:
        """End a session: its tokens are gone with it."""
        if not session_id:
            return
        async with self._database.sessions() as session, session.begin():
            await session.execute(delete(SessionRow).where(SessionRow.id == session_id))
