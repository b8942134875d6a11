"""Who may ask the sandbox's authorization server for tokens, and how each proves it: public
clients by their id, ``client_secret_basic`` by their secret, and ``private_key_jwt`` by an
assertion signed with a key of their registered JWKS (or JWKS URL), its ``jti`` used once."""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

ClientKind = Literal["public", "secret", "private_key_jwt"]
ASSERTION_MAX_LIFETIME_S = 300
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class OAuthError(Exception):
    """An OAuth error answer: ``error`` code, description, HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error, self.description, self.status = error, description, status

    def as_json(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


@dataclass(slots=True)
class RegisteredClient:
    client_id: str
    kind: ClientKind
    redirect_uris: list[str] = field(default_factory=list)
    secret: str | None = None
    jwks: dict[str, Any] | None = None
    jwks_url: str | None = None
    # The resource server its tokens are for (``aud``); None: the sandbox FHIR server. A backend
    # client of Provenote's own FHIR API is registered with that API's base here.
    audience: str | None = None
    # Grant only read scopes, whatever is asked (an EHR whose policy gives this app no writes).
    read_only: bool = False


def _unverified_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT before its signature is checked: only to find whose key checks it."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError) as error:
        raise OAuthError("invalid_client", "malformed client assertion", 401) from error
    if not isinstance(claims, dict):
        raise OAuthError("invalid_client", "malformed client assertion", 401)
    return claims


class ClientAuthentication:
    """The registered clients (shared with the server, which may register more) and the
    assertion ids already used."""

    def __init__(self, clients: dict[str, RegisteredClient], token_url: str) -> None:
        self.clients = clients
        self.token_url = token_url
        self._used_jtis: set[str] = set()

    async def authenticate(
        self, form: dict[str, str], authorization: str | None
    ) -> RegisteredClient:
        if authorization and authorization.startswith("Basic "):
            try:
                decoded = base64.b64decode(authorization[6:]).decode("utf-8")
            except ValueError as error:
                raise OAuthError("invalid_client", "malformed basic credentials", 401) from error
            client_id, _, secret = decoded.partition(":")
            client = self.clients.get(client_id)
            if client is None or client.kind != "secret" or not client.secret:
                raise OAuthError("invalid_client", "client authentication failed", 401)
            if not secrets.compare_digest(secret, client.secret):
                raise OAuthError("invalid_client", "client authentication failed", 401)
            return client
        if form.get("client_assertion_type") == ASSERTION_TYPE:
            return await self._verify_assertion(form.get("client_assertion", ""))
        client = self.clients.get(form.get("client_id", ""))
        if client is None or client.kind != "public":
            raise OAuthError("invalid_client", "client authentication failed", 401)
        return client

    async def _client_keys(self, client: RegisteredClient) -> KeySet:
        if client.jwks is not None:
            return KeySet.import_key_set(client.jwks)
        if client.jwks_url:
            async with httpx.AsyncClient(timeout=10) as http:
                response = await http.get(client.jwks_url)
                response.raise_for_status()
                return KeySet.import_key_set(response.json())
        raise OAuthError("invalid_client", "the client has no registered keys", 401)

    async def _verify_assertion(self, assertion: str) -> RegisteredClient:
        client_id = _unverified_claims(assertion).get("iss")
        client = self.clients.get(client_id or "")
        if client is None or client.kind != "private_key_jwt":
            raise OAuthError("invalid_client", "unknown asymmetric client", 401)
        try:
            token = jwt.decode(
                assertion, await self._client_keys(client), algorithms=["RS384", "ES384"]
            )
        except JoseError as error:
            raise OAuthError(
                "invalid_client", f"client assertion rejected: {error}", 401
            ) from error
        claims = token.claims
        now = time.time()
        if claims.get("iss") != client.client_id or claims.get("sub") != client.client_id:
            raise OAuthError("invalid_client", "assertion iss and sub must be the client_id", 401)
        audiences = (
            claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
        )
        if self.token_url not in audiences:
            raise OAuthError("invalid_client", "assertion aud must be the token endpoint", 401)
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or expires <= now:
            raise OAuthError("invalid_client", "assertion expired or without exp", 401)
        if expires > now + ASSERTION_MAX_LIFETIME_S + 5:
            raise OAuthError("invalid_client", "assertion exp is more than 5 minutes ahead", 401)
        jti = claims.get("jti")
        if not jti or jti in self._used_jtis:
            raise OAuthError("invalid_client", "assertion jti missing or already used", 401)
        self._used_jtis.add(jti)
        return client
