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
from smartapp.oauth import (
    SmartError,
    client_credentials,
    discover,
    refresh_tokens,
    system_scopes,
)
from smartapp.sessions import LaunchContext, SessionStore, StoredTokens
from smartapp.settings import AppSettings
from smartapp.style import StyleCache

SESSION_COOKIE = "provenote_session"


@dataclass(slots=True)
class AppState:
    settings: AppSettings
    database: Database
    store: SessionStore
    key: RSAKey | ECKey | None
    http: httpx.AsyncClient
    # The secret CSRF tokens are derived from (smartapp.keys.app_secret).
    secret: bytes
    styles: StyleCache
    jobs: JobService | None = None
    loop: asyncio.AbstractEventLoop | None = None
    refresh_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # SMART Backend Services tokens per EHR, for jobs no user launched ($summarize).
    backend_tokens: dict[str, tuple[str, str, float | None]] = field(default_factory=dict)


def token_expiry(expires_in: int | None) -> float | None:
    return time.time() + expires_in if expires_in else None


def token_getter(state: AppState, session_id: str) -> TokenGetter:
    """Current access token; refreshed before expiry, or on demand after a 401 (once)."""

    async def get_token(force_refresh: bool) -> str | None:
        lock = state.refresh_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            stored = await state.store.tokens(session_id)
            if stored is None:
                return None
            expiring = stored.expires_at is not None and (
                stored.expires_at - time.time() < state.settings.refresh_margin_s
            )
            if not (force_refresh or expiring):
                return stored.tokens.access_token
            if not stored.tokens.refresh_token:
                return None if force_refresh else stored.tokens.access_token
            try:
                fresh = await refresh_tokens(
                    state.http,
                    stored.config,
                    state.settings,
                    state.key,
                    stored.tokens.refresh_token,
                )
            except SmartError:
                return None
            if fresh.refresh_token is None:
                fresh.refresh_token = stored.tokens.refresh_token
            context = await state.store.context(session_id)
            assert context is not None
            await state.store.save(
                session_id,
                context,
                StoredTokens(
                    config=stored.config, tokens=fresh, expires_at=token_expiry(fresh.expires_in)
                ),
            )
            return fresh.access_token

    return get_token


def fhir_client_for(state: AppState, session_id: str, context: LaunchContext) -> FhirClient:
    settings = state.settings
    return FhirClient(
        context.iss,
        state.http,
        token_getter(state, session_id),
        concurrency=settings.fhir_concurrency,
        max_retries=settings.fhir_max_retries,
        page_size=settings.fhir_page_size,
        max_binary_bytes=settings.max_attachment_bytes,
    )


async def backend_fhir_client(state: AppState, iss: str) -> tuple[FhirClient, str]:
    """A client acting as the app itself (client_credentials), and the scope it was granted."""
    settings = state.settings

    async def fetch(force_refresh: bool) -> str | None:
        cached = state.backend_tokens.get(iss)
        fresh_enough = cached is not None and (
            cached[2] is None or cached[2] - time.time() > settings.refresh_margin_s
        )
        if cached is not None and fresh_enough and not force_refresh:
            return cached[0]
        try:
            config = await discover(state.http, iss)
            tokens = await client_credentials(
                state.http, config, settings, state.key, system_scopes(config)
            )
        except SmartError as failure:
            raise RuntimeError(
                f"the EHR refused Provenote's backend access: {failure}"
            ) from failure
        state.backend_tokens[iss] = (
            tokens.access_token,
            tokens.scope,
            token_expiry(tokens.expires_in),
        )
        return tokens.access_token

    await fetch(False)
    client = FhirClient(
        iss,
        state.http,
        fetch,
        concurrency=settings.fhir_concurrency,
        max_retries=settings.fhir_max_retries,
        page_size=settings.fhir_page_size,
        max_binary_bytes=settings.max_attachment_bytes,
    )
    return client, state.backend_tokens[iss][1]
