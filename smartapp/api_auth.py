"""Bearer tokens for the FHIR API: SMART Backend Services JWTs from one configured issuer.

A token is accepted when its signature checks against the issuer's JWKS (fetched, cached, and
fetched again once when a token names a key we have not seen: keys rotate), ``iss`` is the
issuer, ``aud`` is this API, and it has not expired. What it may do is its ``system/`` scopes.
No token, a bad one or an expired one is 401; a good token without the scope is 403.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from smartapp.scopes import granted
from smartapp.settings import AppSettings

ALGORITHMS = ["RS256", "RS384", "ES256", "ES384"]
JWKS_TTL_S = 300.0
LEEWAY_S = 30


class ApiAuthError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True, slots=True)
class ApiClient:
    """Who called: the token's client and its scopes."""

    client_id: str
    scope: str

    def require(self, resource_type: str, action: str) -> None:
        if not granted(self.scope, resource_type, action, levels=("system",)):
            raise ApiAuthError(
                403,
                "forbidden",
                f"the token's scopes do not allow this: it needs system/{resource_type}.{action}",
            )


@dataclass(slots=True)
class TokenVerifier:
    settings: AppSettings
    http: httpx.AsyncClient
    _keys: KeySet | None = None
    _fetched_at: float = 0.0
    _kids: set[str] = field(default_factory=set)

    async def _key_set(self, kid: str | None) -> KeySet:
        stale = time.monotonic() - self._fetched_at > JWKS_TTL_S
        unknown = kid is not None and kid not in self._kids
        if self._keys is None or stale or unknown:
            if not self.settings.api_jwks_url:
                raise ApiAuthError(401, "login", "the API has no issuer JWKS configured")
            try:
                response = await self.http.get(self.settings.api_jwks_url, timeout=10.0)
                response.raise_for_status()
                self._keys = KeySet.import_key_set(response.json())
            except (httpx.HTTPError, ValueError, JoseError) as error:
                raise ApiAuthError(
                    401, "login", f"the issuer's keys could not be read: {error}"
                ) from error
            self._fetched_at = time.monotonic()
            self._kids = {key.kid for key in self._keys if key.kid}
        return self._keys

    async def verify(self, authorization: str | None) -> ApiClient:
        if not self.settings.api_issuer:
            raise ApiAuthError(401, "login", "this server accepts no tokens: no issuer configured")
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiAuthError(401, "login", "a bearer token is required")
        token = token.strip()
        try:
            header = extract_compact(token.encode("ascii")).protected
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
