"""What the running app holds, and FHIR clients that act with a launch session's tokens."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx
from joserfc.jwk import ECKey, RSAKey

from smartapp.db import Database
from smartapp.fhir_client import FhirClient, TokenGetter
from smartapp.jobs import JobService
from smartapp.keys import registration_key
from smartapp.oauth import (
    SmartError,
    client_credentials,
    discover,
    refresh_tokens,
    system_scopes,
)
from smartapp.sessions import SessionStore, StoredTokens
from smartapp.settings import AppSettings, ClientRegistration
from smartapp.style import StyleCache

SESSION_COOKIE = "provenote_session"
# Over HTTPS the cookie is host-only, secure and path-wide, which the prefix makes the browser
# enforce (no subdomain can set or shadow it).
SECURE_SESSION_COOKIE = "__Host-provenote_session"
# The binding between /launch and /callback: which browser started the pending launch.
LAUNCH_COOKIE = "provenote_launch"
SECURE_LAUNCH_COOKIE = "__Host-provenote_launch"


@dataclass(slots=True)
class AppState:
    settings: AppSettings
    database: Database
    store: SessionStore
    http: httpx.AsyncClient
    # The secret CSRF tokens are derived from (smartapp.keys.app_secret).
    secret: bytes
    styles: StyleCache
    jobs: JobService | None = None
    loop: asyncio.AbstractEventLoop | None = None
    installation: str = ""
    refresh_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # SMART Backend Services tokens per EHR, for jobs no user launched ($summarize).
    backend_tokens: dict[str, tuple[str, str, float | None]] = field(default_factory=dict)
    _keys: dict[str, RSAKey | ECKey | None] = field(default_factory=dict)

    @property
    def session_cookie(self) -> str:
        return SECURE_SESSION_COOKIE if self.settings.https else SESSION_COOKIE

    @property
    def launch_cookie(self) -> str:
        return SECURE_LAUNCH_COOKIE if self.settings.https else LAUNCH_COOKIE

    def key_for(self, registration: ClientRegistration) -> RSAKey | ECKey | None:
        """The private_key_jwt key for an EHR (loaded once)."""
        if registration.issuer not in self._keys:
            self._keys[registration.issuer] = registration_key(self.settings, registration)
        return self._keys[registration.issuer]

    def registration(self, iss: str) -> ClientRegistration:
        registration = self.settings.registration_for(iss)
        if registration is None:
            raise SmartError("this EHR is no longer configured for Provenote")
        return registration


def token_expiry(expires_in: int | None) -> float | None:
    return time.time() + expires_in if expires_in else None


def refresh_margin(settings: AppSettings, expires_in: int | None) -> float:
    """How long before expiry a token is refreshed: never more than half its lifetime, so a
    short-lived token is not refreshed on every request."""
    margin = float(settings.refresh_margin_s)
    return min(margin, expires_in / 2) if expires_in else margin


def token_getter(state: AppState, session_id: str) -> TokenGetter:
    """Current access token; refreshed before expiry, or on demand after a 401 (once)."""

    async def get_token(force_refresh: bool) -> str | None:
        lock = state.refresh_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            stored = await state.store.tokens(session_id)
            if stored is None:
                return None
            margin = refresh_margin(state.settings, stored.tokens.expires_in)
            expiring = stored.expires_at is not None and (stored.expires_at - time.time() < margin)
            if not (force_refresh or expiring):
                return stored.tokens.access_token
            if not stored.tokens.refresh_token:
                return None if force_refresh else stored.tokens.access_token
            context = await state.store.stored_context(session_id)
            if context is None:
                return None
            try:
                registration = state.registration(context.iss)
                fresh = await refresh_tokens(
                    state.http,
                    stored.config,
                    registration,
                    state.key_for(registration),
                    stored.tokens.refresh_token,
                )
            except SmartError:
                return None
            if fresh.refresh_token is None:
                fresh.refresh_token = stored.tokens.refresh_token
            await state.store.save(
                session_id,
                context,
                StoredTokens(
                    config=stored.config, tokens=fresh, expires_at=token_expiry(fresh.expires_in)
                ),
            )
            return fresh.access_token

    return get_token


def _client(state: AppState, iss: str, token: TokenGetter) -> FhirClient:
    settings = state.settings
    return FhirClient(
        iss,
        state.http,
        token,
        concurrency=settings.fhir_concurrency,
        max_retries=settings.fhir_max_retries,
        page_size=settings.fhir_page_size,
        max_binary_bytes=settings.max_attachment_bytes,
    )


def fhir_client_for(state: AppState, session_id: str, iss: str) -> FhirClient:
    """A client for the session's EHR, acting with the session's tokens."""
    return _client(state, iss, token_getter(state, session_id))


async def backend_fhir_client(state: AppState, iss: str) -> tuple[FhirClient, str]:
    """A client acting as the app itself (client_credentials), and the scope it was granted."""
    settings = state.settings
    registration = state.registration(iss)

    async def fetch(force_refresh: bool) -> str | None:
        cached = state.backend_tokens.get(iss)
        fresh_enough = cached is not None and (
            cached[2] is None or cached[2] - time.time() > settings.refresh_margin_s
        )
        if cached is not None and fresh_enough and not force_refresh:
            return cached[0]
        config = await discover(state.http, registration)
        tokens = await client_credentials(
            state.http, config, registration, state.key_for(registration), system_scopes(config)
        )
        state.backend_tokens[iss] = (
            tokens.access_token,
            tokens.scope,
            token_expiry(tokens.expires_in),
        )
        return tokens.access_token

    await fetch(False)
    return _client(state, iss, fetch), state.backend_tokens[iss][1]
