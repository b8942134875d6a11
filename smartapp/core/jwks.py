"""Keys published as a JWK Set at a URL, for checking the JWTs their owner signs: the FHIR API
issuer's bearer tokens, and each EHR's CDS Hooks calls.

The set is fetched when first needed and when stale, and fetched again for a ``kid`` not seen
yet (keys rotate), at most once per ``api_jwks_min_refetch_s``; an unknown ``kid`` is remembered
for ``api_unknown_kid_ttl_s`` and refused without a fetch, so a flood of forged tokens never
turns into a flood of requests to the key owner.

A key URL that hangs or fails holds no call for long: a fetch is bounded to 2 seconds, one at a
time; keys read before keep answering when a refresh fails; and a failure is remembered with a
back-off (1 s, doubling to 60 s), during which calls are answered at once from what is known
instead of waiting on the URL again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from smartapp.core.errors import logged
from smartapp.core.settings import Settings

JWKS_TTL_S = 300.0
FETCH_TIMEOUT_S = 2.0
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0


class KeysUnavailableError(Exception):
    """The key set could not be read; the message ("keys could not be read (error …)") names
    the error id of the logged cause."""


class UnknownKeyError(Exception):
    """The JWT names a key the owner does not publish."""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def unverified_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a compact JWT before its signature is checked: only to find whose
    key checks it, and to refuse an obviously wrong token before any key is fetched.
    ValueError when it is not a JWT."""
    try:
        compact = extract_compact(token.encode("ascii"))
        claims = json.loads(compact.payload)
    except (JoseError, ValueError, UnicodeError) as error:
        raise ValueError("not a JWT") from error
    if not isinstance(claims, dict):
        raise ValueError("not a JWT")
    return dict(compact.protected), claims


@dataclass(slots=True)
class PublishedKeys:
    """One owner's key set at ``url``, with the refetch limits of ``settings`` (read at each
    use, so an operator's change applies at once)."""

    url: str
    http: httpx.AsyncClient
    settings: Settings
    _keys: KeySet | None = None
    _fetched_at: float = float("-inf")
    _kids: set[str] = field(default_factory=set)
    _unknown: dict[str, float] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _failed_until: float = float("-inf")
    _backoff_s: float = FIRST_BACKOFF_S
    _failure: str = ""

    async def _fetch(self) -> None:
        """Read the set, or raise KeysUnavailableError: at once while a failure's back-off
        runs, else after at most FETCH_TIMEOUT_S; one fetch at a time, the others wait for it."""
        async with self._lock:
            if time.monotonic() < self._failed_until:
                raise KeysUnavailableError(self._failure)
            try:
                async with asyncio.timeout(FETCH_TIMEOUT_S):  # whatever the transport does
                    response = await self.http.get(self.url, timeout=FETCH_TIMEOUT_S)
                response.raise_for_status()
                keys = KeySet.import_key_set(response.json())
            except (httpx.HTTPError, ValueError, JoseError, TimeoutError) as error:
                error_id = logged(f"the key set at {self.url}", repr(error))
                self._failure = f"keys could not be read (error {error_id})"
                self._failed_until = time.monotonic() + self._backoff_s
                self._backoff_s = min(self._backoff_s * 2, MAX_BACKOFF_S)
                raise KeysUnavailableError(self._failure) from error
            self._keys, self._backoff_s = keys, FIRST_BACKOFF_S
            self._fetched_at = time.monotonic()
            self._kids = {key.kid for key in keys if key.kid}

    async def key_set(self, kid: str | None) -> KeySet:
        """The keys, holding ``kid`` when one is named; UnknownKeyError when they do not."""
        now = time.monotonic()
        since = now - self._fetched_at
        ttl = self.settings.api_unknown_kid_ttl_s
        self._unknown = {k: t for k, t in self._unknown.items() if now - t < ttl}
        if self._keys is None:
            await self._fetch()
        elif since > JWKS_TTL_S:
            # Stale: refreshed when the owner answers, else the keys known go on answering.
            with contextlib.suppress(KeysUnavailableError):
                await self._fetch()
        elif kid is not None and kid not in self._kids:
            if kid in self._unknown or since < self.settings.api_jwks_min_refetch_s:
                self._unknown.setdefault(kid, now)
                raise UnknownKeyError(kid)
            with contextlib.suppress(KeysUnavailableError):  # refused below as unknown
                await self._fetch()
        if kid is not None and kid not in self._kids:
            self._unknown[kid] = now
            raise UnknownKeyError(kid)
        assert self._keys is not None
        return self._keys
