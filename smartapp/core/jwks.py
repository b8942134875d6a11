"""Keys published as a JWK Set at a URL, for checking the JWTs their owner signs: the FHIR API
issuer's bearer tokens, and each EHR's CDS Hooks calls.

The set is fetched when first needed and when stale, and fetched again for a ``kid`` not seen
yet (keys rotate), at most once per ``api_jwks_min_refetch_s``; an unknown ``kid`` is remembered
for ``api_unknown_kid_ttl_s`` and refused without a fetch, so a flood of forged tokens never
turns into a flood of requests to the key owner.
"""

from __future__ import annotations

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

    async def _fetch(self) -> None:
        self._fetched_at = time.monotonic()
        try:
            response = await self.http.get(self.url, timeout=10.0)
            response.raise_for_status()
            self._keys = KeySet.import_key_set(response.json())
        except (httpx.HTTPError, ValueError, JoseError) as error:
            error_id = logged(f"the key set at {self.url}", repr(error))
            raise KeysUnavailableError(f"keys could not be read (error {error_id})") from error
        self._kids = {key.kid for key in self._keys if key.kid}

    async def key_set(self, kid: str | None) -> KeySet:
        """The keys, holding ``kid`` when one is named; UnknownKeyError when they do not."""
        now = time.monotonic()
        since = now - self._fetched_at
        ttl = self.settings.api_unknown_kid_ttl_s
        self._unknown = {k: t for k, t in self._unknown.items() if now - t < ttl}
        if self._keys is None or since > JWKS_TTL_S:
            await self._fetch()
        elif kid is not None and kid not in self._kids:
            if kid in self._unknown or since < self.settings.api_jwks_min_refetch_s:
                self._unknown.setdefault(kid, now)
                raise UnknownKeyError(kid)
            await self._fetch()
        if kid is not None and kid not in self._kids:
            self._unknown[kid] = now
            raise UnknownKeyError(kid)
        assert self._keys is not None
        return self._keys
