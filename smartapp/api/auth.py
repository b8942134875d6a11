"""Bearer tokens for the FHIR API: SMART Backend Services JWTs from one configured issuer.

A token is accepted when its signature checks against the issuer's JWKS (fetched, cached, and
fetched again, rate-limited, when a well-formed token names a key we have not seen: keys rotate),
``iss`` is the issuer, ``aud`` is this API, and it has not expired. Granular (restricted) scopes
are refused, never read as the whole permission. What it may do is its ``system/`` scopes.
No token, a bad one or an expired one is 401; a good token without the scope is 403.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from fhir_mapping.smart_scopes import granted, only_restricted
from smartapp.core.errors import CallerError, logged
from smartapp.core.settings import Settings

ALGORITHMS = ["RS256", "RS384", "ES256", "ES384"]
JWKS_TTL_S = 300.0
LEEWAY_S = 30


class ApiAuthError(CallerError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status_code, self.code = status, code


@dataclass(frozen=True, slots=True)
class ApiClient:
    """Who called: the token's client and its scopes."""

    client_id: str
    scope: str

    def require(self, resource_type: str, action: str) -> None:
        if only_restricted(self.scope, resource_type, action, levels=("system",)):
            raise ApiAuthError(
                403,
                "forbidden",
                f"granular scopes (system/{resource_type}.{action}?…) are not supported by this "
                "server; a token needs the unrestricted scope",
            )
        if not granted(self.scope, resource_type, action, levels=("system",)):
            raise ApiAuthError(
                403,
                "forbidden",
                f"the token's scopes do not allow this: it needs system/{resource_type}.{action}",
            )


def _unverified_claims(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a compact JWT before its signature is checked: only to refuse an
    obviously wrong token before any key is fetched."""
    try:
        compact = extract_compact(token.encode("ascii"))
        claims = json.loads(compact.payload)
    except (JoseError, ValueError, UnicodeError) as error:
        raise ApiAuthError(401, "login", "the bearer token is not a JWT") from error
    if not isinstance(claims, dict):
        raise ApiAuthError(401, "login", "the bearer token is not a JWT")
    return dict(compact.protected), claims


@dataclass(slots=True)
class TokenVerifier:
    """Checks bearer tokens; the issuer's JWKS is fetched on start, when stale, and again for
    an unknown ``kid`` at most once per ``api_jwks_min_refetch_s``. An unknown kid is
    remembered for ``api_unknown_kid_ttl_s``, so a flood of forged tokens fetches nothing."""

    settings: Settings
    http: httpx.AsyncClient
    _keys: KeySet | None = None
    _fetched_at: float = float("-inf")
    _kids: set[str] = field(default_factory=set)
    _unknown: dict[str, float] = field(default_factory=dict)

    async def _fetch(self) -> None:
        if not self.settings.api_jwks_url:
            raise ApiAuthError(401, "login", "the API has no issuer JWKS configured")
        self._fetched_at = time.monotonic()
        try:
            response = await self.http.get(self.settings.api_jwks_url, timeout=10.0)
            response.raise_for_status()
            self._keys = KeySet.import_key_set(response.json())
        except (httpx.HTTPError, ValueError, JoseError) as error:
            error_id = logged("API issuer JWKS", repr(error))
            raise ApiAuthError(
                401, "login", f"the issuer's keys could not be read (error {error_id})"
            ) from error
        self._kids = {key.kid for key in self._keys if key.kid}

    async def _key_set(self, kid: str | None) -> KeySet:
        now = time.monotonic()
        since = now - self._fetched_at
        ttl = self.settings.api_unknown_kid_ttl_s
        self._unknown = {k: t for k, t in self._unknown.items() if now - t < ttl}
        if self._keys is None or since > JWKS_TTL_S:
            await self._fetch()
        elif kid is not None and kid not in self._kids:
            if kid in self._unknown or since < self.settings.api_jwks_min_refetch_s:
                self._unknown.setdefault(kid, now)
                raise ApiAuthError(401, "login", "the bearer token is signed by an unknown key")
            await self._fetch()
        if kid is not None and kid not in self._kids:
            self._unknown[kid] = now
            raise ApiAuthError(401, "login", "the bearer token is signed by an unknown key")
        assert self._keys is not None
        return self._keys

    def _check_shape(self, header: dict[str, Any], claims: dict[str, Any]) -> None:
        """The claims any valid token has, checked before a key is looked for."""
        audience = self.settings.api_audience or self.settings.api_base
        aud = claims.get("aud")
        audiences: list[Any] = aud if isinstance(aud, list) else [aud]
        expires = claims.get("exp")
        if (
            header.get("alg") not in ALGORITHMS
            or claims.get("iss") != self.settings.api_issuer
            or audience not in audiences
            or not isinstance(expires, int | float)
            or expires + LEEWAY_S < time.time()
        ):
            raise ApiAuthError(
                401, "login", "the bearer token is not valid: wrong issuer, audience or expired"
            )

    async def verify(self, authorization: str | None) -> ApiClient:
        if not self.settings.api_issuer:
            raise ApiAuthError(401, "login", "this server accepts no tokens: no issuer configured")
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiAuthError(401, "login", "a bearer token is required")
        token = token.strip()
        header, unverified = _unverified_claims(token)
        self._check_shape(header, unverified)
        try:
            keys = await self._key_set(header.get("kid"))
            decoded = jwt.decode(token, keys, algorithms=ALGORITHMS)
            audience = self.settings.api_audience or self.settings.api_base
            jwt.JWTClaimsRegistry(
                leeway=LEEWAY_S,
                iss={"essential": True, "value": self.settings.api_issuer},
                aud={"essential": True, "value": audience},
                exp={"essential": True},
            ).validate(decoded.claims)
        except ApiAuthError:
            raise
        except (JoseError, ValueError) as error:
            raise ApiAuthError(401, "login", f"the bearer token is not valid: {error}") from error
        claims = decoded.claims
        client_id = str(claims.get("client_id") or claims.get("sub") or "unknown client")
        return ApiClient(client_id=client_id, scope=str(claims.get("scope", "")))
