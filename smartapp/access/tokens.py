"""The EHR's tokens, and FHIR clients that act with them.

A launch session's access token is refreshed before it expires (or once after a 401), under the
session store's refresh lock, so no two tasks or processes ever spend one refresh token twice. A
job no user launched (the API's ``$summarize``) acts as Provenote itself, with a SMART Backend
Services token per EHR.
"""

from __future__ import annotations

import time

import httpx
from joserfc.jwk import ECKey, RSAKey

from smartapp.access.discovery import SmartConfiguration, discover
from smartapp.access.oauth import TokenEndpoint, TokenResponse, system_scopes
from smartapp.access.sessions import SessionStore, StoredTokens
from smartapp.access.smart_errors import SetupError, SmartError
from smartapp.core.db import Database
from smartapp.core.errors import LaunchError
from smartapp.core.keys import registration_key
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings
from smartapp.core.statuses import ACTS_AS_PROVENOTE
from smartapp.core.tables import JobRow
from smartapp.ehr.egress import TokenGetter
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.rate_gate import SharedRateGate

GRANT_ENDED = (
    "Your EHR session ended, and the EHR gave Provenote no way to renew it: launch Provenote "
    "again from the patient's chart. The draft and your review so far are kept."
)
RENEWAL_REFUSED = (
    "Your EHR session ended, and the EHR refused to renew it (the renewal may have been "
    "revoked or have expired): launch Provenote again from the patient's chart. The draft and "
    "your review so far are kept."
)


class GrantEndedError(LaunchError):
    """The EHR's grant is over (the token expired and cannot be refreshed): only a new launch
    from the chart can go on. Nothing of the draft or its review is lost."""

    status_code = 401
    heading = "Your EHR session ended"

    def __init__(self, message: str = GRANT_ENDED) -> None:
        super().__init__(message)


def grant_ends_at(tokens: TokenResponse) -> float | None:
    """When a grant ends: with a refresh token, not before the session's own limits; without
    one, when its access token expires."""
    return None if tokens.refresh_token else token_expiry(tokens.expires_in)


def token_expiry(expires_in: int | None) -> float | None:
    return time.time() + expires_in if expires_in else None


def refresh_margin(settings: Settings, expires_in: int | None) -> float:
    """How long before expiry a token is refreshed: never more than half its lifetime, so a
    short-lived token is not refreshed on every request."""
    margin = float(settings.refresh_margin_s)
    return min(margin, expires_in / 2) if expires_in else margin


class EhrAccess:
    """How this process reaches each configured EHR: its registration, its key, the tokens of
    launch sessions and of Provenote itself, and FHIR clients acting with them."""

    def __init__(
        self,
        settings: Settings,
        store: SessionStore,
        http: httpx.AsyncClient,
        database: Database | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.http = http
        # Where the installation's per-EHR request budget lives (PostgreSQL only).
        self.database = database
        self._keys: dict[tuple[str, str, str], RSAKey | ECKey | None] = {}
        # SMART Backend Services tokens per EHR: (access token, scope, expiry).
        self._backend: dict[str, tuple[str, str, float | None]] = {}

    def key_for(self, registration: ClientRegistration) -> RSAKey | ECKey | None:
        """The private_key_jwt key for an EHR's client (loaded once)."""
        client = (registration.issuer, registration.client_id, registration.client_auth)
        if client not in self._keys:
            self._keys[client] = registration_key(self.settings, registration)
        return self._keys[client]

    def token_endpoint(
        self, config: SmartConfiguration, registration: ClientRegistration
    ) -> TokenEndpoint:
        """The EHR's token endpoint, called as ``registration`` with its key."""
        return TokenEndpoint(self.http, config, registration, self.key_for(registration))

    def registration(self, iss: str) -> ClientRegistration:
        registration = self.settings.registration_for(iss)
        if registration is None:
            raise SetupError("this EHR is no longer configured for Provenote")
        return registration

    def token_getter(self, session_id: str) -> TokenGetter:
        """The session's current access token; refreshed before expiry, or on demand after a
        401 (once). GrantEndedError when the grant is over and cannot be renewed."""

        def current(stored: StoredTokens) -> bool:
            margin = refresh_margin(self.settings, stored.tokens.expires_in)
            return stored.expires_at is None or stored.expires_at - time.time() >= margin

        async def get_token(force_refresh: bool) -> str | None:
            # A current token is read without the refresh lock: the lock holds a connection of
            # its own while the tokens are read with another, so taking it on every request
            # starved the pool when many sessions made requests at once.
            if not force_refresh:
                stored = await self.store.tokens(session_id)
                if stored is None:
                    raise GrantEndedError
                if current(stored):
                    return stored.tokens.access_token
            async with self.store.refresh_lock(session_id):
                stored = await self.store.tokens(session_id)
                if stored is None:
                    raise GrantEndedError
                expired = stored.expires_at is not None and stored.expires_at <= time.time()
                if not force_refresh and current(stored):  # another task refreshed meanwhile
                    return stored.tokens.access_token
                if not stored.tokens.refresh_token:
                    if force_refresh or expired:
                        await self.store.end_grant(session_id)
                        raise GrantEndedError
                    return stored.tokens.access_token
                return await self._refresh(session_id, stored)

        return get_token

    async def _refresh(self, session_id: str, stored: StoredTokens) -> str | None:
        context = await self.store.stored_context(session_id)
        if context is None or stored.tokens.refresh_token is None or stored.config is None:
            raise GrantEndedError
        endpoint = self.token_endpoint(stored.config, self.registration(context.iss))
        try:
            fresh = await endpoint.refresh(stored.tokens.refresh_token)
        except SetupError:
            raise
        except SmartError:
            # The EHR refused the refresh (revoked, expired): the grant is over.
            await self.store.end_grant(session_id)
            raise GrantEndedError(RENEWAL_REFUSED) from None
        if fresh.refresh_token is None:
            fresh.refresh_token = stored.tokens.refresh_token
        expires_at = token_expiry(fresh.expires_in)
        saved = StoredTokens(config=stored.config, tokens=fresh, expires_at=expires_at)
        await self.store.save(session_id, context, saved)
        return fresh.access_token

    def _gate(self, iss: str) -> SharedRateGate | None:
        """The installation's request budget for this EHR, where one is set and shared."""
        rate, database = self.settings.ehr_requests_per_second, self.database
        if rate is None or database is None or not database.is_postgresql:
            return None
        return SharedRateGate(database, iss, rate, self.settings.ehr_request_burst)

    def _client(self, iss: str, token: TokenGetter) -> FhirClient:
        settings = self.settings
        return FhirClient(
            iss,
            self.http,
            token,
            concurrency=settings.fhir_concurrency,
            max_retries=settings.fhir_max_retries,
            page_size=settings.fhir_page_size,
            max_binary_bytes=settings.max_attachment_bytes,
            gate=self._gate(iss),
        )

    def client_for(self, session_id: str, iss: str) -> FhirClient:
        """A client for the session's EHR, acting with the session's tokens."""
        return self._client(iss, self.token_getter(session_id))

    def client_with_token(self, iss: str, access_token: str) -> FhirClient:
        """A client acting with a token the EHR lent for one call (a CDS hook's
        fhirAuthorization): never refreshed, and sent only under ``iss`` like any other."""

        async def lent(force_refresh: bool) -> str | None:
            return access_token

        return self._client(iss, lent)

    async def backend_client(self, iss: str) -> tuple[FhirClient, str]:
        """A client acting as the app itself (client_credentials), and the scope it was
        granted."""
        registration = self.registration(iss).backend()

        async def fetch(force_refresh: bool) -> str | None:
            cached = self._backend.get(iss)
            fresh_enough = cached is not None and (
                cached[2] is None or cached[2] - time.time() > self.settings.refresh_margin_s
            )
            if cached is not None and fresh_enough and not force_refresh:
                return cached[0]
            config = await discover(self.http, registration)
            endpoint = self.token_endpoint(config, registration)
            tokens = await endpoint.client_credentials(system_scopes(config))
            expiry = token_expiry(tokens.expires_in)
            self._backend[iss] = (tokens.access_token, tokens.scope, expiry)
            return tokens.access_token

        await fetch(False)
        return self._client(iss, fetch), self._backend[iss][1]

    async def client_for_job(self, job: JobRow) -> tuple[FhirClient, str]:
        """A client for a job's EHR: as Provenote itself for the API's jobs, else with the
        tokens of the launch behind the job; and the scope it acts with."""
        if job.origin in ACTS_AS_PROVENOTE:
            return await self.backend_client(job.iss)
        context = await self.store.stored_context(job.session_id)
        if context is None:
            raise LaunchError("the job's launch session has ended; launch again from the chart")
        return self.client_for(job.session_id, job.iss), context.scope
