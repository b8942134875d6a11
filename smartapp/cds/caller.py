"""Who is calling the CDS service: the EHR's JWT, checked as CDS Hooks 2.0 asks.

Each call carries a JWT that a registered EHR signed (``Authorization: Bearer``). It is accepted
only when its ``iss`` names a registration that publishes hook keys (``cds_jwks_uri``), its
``kid`` is one of those keys and the signature holds (ES384 or RS384), its ``aud`` is the
service's own URL, it has not expired and lives at most five minutes from its ``iat``, and its
``jti`` was never seen before (kept in the database until the JWT expires plus the clock skew,
so a replay is refused by every process). Nothing else in the call is read before that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from pydantic import ValidationError
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from smartapp.core.db import Database
from smartapp.core.jwks import (
    KeysUnavailableError,
    PublishedKeys,
    UnknownKeyError,
    bearer_token,
    unverified_parts,
)
from smartapp.core.registrations import ClientRegistration, normalise_issuer
from smartapp.core.settings import Settings
from smartapp.core.tables import HookCallRow, utcnow

# The algorithms CDS Hooks 2.0 names for the EHR's JWT.
ALGORITHMS = ["ES384", "RS384"]
MAX_LIFETIME_S = 300
CLOCK_SKEW_S = 30


class HookRefusedError(Exception):
    """A call refused: the HTTP status, an error code (OAuth's, for a bearer JWT: RFC 6750)
    and words for the EHR's integrators. Never anything the caller sent."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status, self.error, self.description = status, error, description

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


def invalid_request(invalid: ValidationError, what: str) -> HookRefusedError:
    """A 400 that says which field is wrong and why, never echoing what was sent."""
    where = "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
        for error in invalid.errors(include_input=False)
    )
    return HookRefusedError(400, "invalid_request", f"not a valid {what} ({where})")


def _refused(description: str) -> HookRefusedError:
    return HookRefusedError(401, "invalid_token", description)


@dataclass(slots=True)
class HookKeys:
    """The registered EHRs' hook keys: one published key set per ``cds_jwks_uri``, fetched and
    refetched as ``smartapp.core.jwks`` allows (a flood of JWTs naming unknown keys fetches
    nothing)."""

    http: httpx.AsyncClient
    settings: Settings
    _published: dict[str, PublishedKeys] = field(default_factory=dict)

    async def key_set(self, registration: ClientRegistration, kid: str) -> KeySet:
        url = registration.cds_jwks_uri
        if url is None:
            raise _refused("the EHR publishes no keys for CDS Hooks")
        if url not in self._published:
            self._published[url] = PublishedKeys(url, self.http, self.settings)
        try:
            return await self._published[url].key_set(kid)
        except KeysUnavailableError as failure:
            raise HookRefusedError(503, "temporarily_unavailable", f"the EHR's {failure}") from None
        except UnknownKeyError:
            raise _refused("the JWT is signed by a key the EHR does not publish") from None


def hook_registration(settings: Settings, iss: str) -> ClientRegistration | None:
    """The registration whose hook JWTs carry ``iss``; only one that publishes hook keys."""
    issuer = normalise_issuer(iss)
    for registration in settings.registrations:
        if registration.cds_jwks_uri and registration.hook_issuer == issuer:
            return registration
    return None


async def _first_use(database: Database, issuer: str, jti: str, expires: float) -> bool:
    """Whether ``jti`` is new for this issuer. It is then kept until the JWT can no longer be
    accepted, its expiry plus the clock skew allowed: forgotten at its expiry, it could be
    replayed for the skew's 30 seconds."""
    now = utcnow()
    kept_until = datetime.fromtimestamp(expires + CLOCK_SKEW_S, UTC)
    try:
        async with database.sessions() as session, session.begin():
            await session.execute(delete(HookCallRow).where(HookCallRow.expires_at < now))
            session.add(HookCallRow(issuer=issuer, jti=jti, expires_at=kept_until))
    except IntegrityError:
        return False
    return True


def _checked_claims(claims: dict[str, Any], audience: str | tuple[str, ...]) -> tuple[float, str]:
    """The JWT's expiry and jti, once its audience and times hold."""
    audiences = claims.get("aud")
    listed = audiences if isinstance(audiences, list) else [audiences]
    accepted = (audience,) if isinstance(audience, str) else audience
    if not any(url in listed for url in accepted):
        raise _refused("the JWT's aud is not this service's URL")
    now = time.time()
    expires, issued = claims.get("exp"), claims.get("iat")
    if not isinstance(expires, int | float) or expires <= now - CLOCK_SKEW_S:
        raise _refused("the JWT has expired or has no exp")
    if not isinstance(issued, int | float) or issued > now + CLOCK_SKEW_S:
        raise _refused("the JWT has no iat, or one in the future")
    # Its lifetime runs from when it was issued: a JWT issued an hour ago with five minutes
    # left has lived too long already.
    if expires - issued > MAX_LIFETIME_S or expires - now > MAX_LIFETIME_S + CLOCK_SKEW_S:
        raise _refused("the JWT lives longer than five minutes")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not 0 < len(jti) <= 255:
        raise _refused("the JWT has no jti")
    return float(expires), jti


async def verified_caller(
    authorization: str | None,
    audience: str | tuple[str, ...],
    settings: Settings,
    keys: HookKeys,
    database: Database,
) -> ClientRegistration:
    """The registration of the EHR that signed this call; HookRefusedError otherwise.
    ``audience``: the URL (or any of the URLs) the JWT's ``aud`` may name."""
    token = bearer_token(authorization)
    if token is None:
        raise _refused("the call carries no bearer JWT")
    try:
        header, claims = unverified_parts(token)
    except ValueError:
        raise _refused("the bearer token is not a JWT") from None
    issuer = claims.get("iss")
    registration = hook_registration(settings, issuer) if isinstance(issuer, str) else None
    if registration is None:
        raise _refused("the JWT's issuer is not a registered EHR")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise _refused("the JWT names no kid")
    try:
        keyset = await keys.key_set(registration, kid)
        verified = jwt.decode(token, keyset, algorithms=ALGORITHMS)
    except (JoseError, ValueError) as failure:
        raise _refused(f"the JWT's signature does not hold ({type(failure).__name__})") from None
    expires, jti = _checked_claims(dict(verified.claims), audience)
    if not await _first_use(database, registration.hook_issuer, jti, expires):
        raise _refused("the JWT's jti was used before (a replayed call)")
    return registration
