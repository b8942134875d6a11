"""Bearer tokens for the FHIR API: SMART Backend Services JWTs from one configured issuer.

A token is accepted when its signature checks against the issuer's JWKS (fetched, cached, and
fetched again, rate-limited, when a well-formed token names a key we have not seen: keys rotate;
``smartapp.core.jwks``),
``iss`` is the issuer, ``aud`` is this API, and it has not expired. Granular (restricted) scopes
are refused, never read as the whole permission. What it may do is its ``system/`` scopes.
No token, a bad one or an expired one is 401; a good token without the scope is 403.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from fhir_mapping.smart_scopes import granted, only_restricted
from smartapp.core.errors import CallerError
from smartapp.core.jwks import (
    KeysUnavailableError,
    PublishedKeys,
    UnknownKeyError,
    bearer_token,
    unverified_parts,
)
from smartapp.core.settings import Settings

ALGORITHMS = ["RS256", "RS384", "ES256", "ES384"]
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
    try:
        return unverified_parts(token)
    except ValueError as error:
        raise ApiAuthError(401, "login", "the bearer token is not a JWT") from error


@dataclass(slots=True)
class TokenVerifier:
    """Checks bearer tokens against the issuer's published keys (``smartapp.core.jwks``:
    fetched on start, when stale, and for an unknown ``kid`` at most once per
    ``api_jwks_min_refetch_s``, so a flood of forged tokens fetches nothing)."""

    settings: Settings
    http: httpx.AsyncClient
    _published: PublishedKeys | None = None

    async def _key_set(self, kid: str | None) -> KeySet:
        url = self.settings.api_jwks_url
        if not url:
            raise ApiAuthError(401, "login", "the API has no issuer JWKS configured")
        if self._published is None or self._published.url != url:
            self._published = PublishedKeys(url, self.http, self.settings)
        try:
            return await self._published.key_set(kid)
        except KeysUnavailableError as failure:
            raise ApiAuthError(401, "login", f"the issuer's {failure}") from failure
        except UnknownKeyError:
            raise ApiAuthError(
                401, "login", "the bearer token is signed by an unknown key"
            ) from None

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
        token = bearer_token(authorization)
        if token is None:
            raise ApiAuthError(401, "login", "a bearer token is required")
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
