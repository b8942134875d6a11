"""The sandbox's SMART authorization server: authorize, token, JWKS, and launch contexts.

It plays the EHR's part in SMART App Launch 2.x for development and tests: it auto-approves as a
configured practitioner, resolves a launch token to patient and encounter, checks PKCE (S256),
authenticates its clients (``launch.sandbox.clients``: public, ``client_secret_basic`` and
``private_key_jwt``), and issues RS256 access tokens that the sandbox FHIR server verifies,
refresh tokens, and OpenID id_tokens with ``fhirUser``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from launch.sandbox.clients import ClientAuthentication, OAuthError, RegisteredClient

CODE_TTL_S = 120


def _writes(scope: str) -> bool:
    """Whether a resource scope permits creating, updating or deleting (v1 or v2)."""
    head, _, tail = scope.partition("/")
    if head not in {"patient", "user", "system"}:
        return False
    permission = tail.partition(".")[2].partition("?")[0]
    return permission in {"write", "*"} or any(letter in permission for letter in "cud")


@dataclass(slots=True)
class LaunchContext:
    patient: str
    encounter: str | None = None
    # Who launched (fhirUser); None: the sandbox's practitioner.
    user: str | None = None
    # A CDS Hooks card's appContext, handed to the app with its tokens.
    app_context: str | None = None


@dataclass(slots=True)
class _Grant:
    client_id: str
    redirect_uri: str
    scope: str
    context: LaunchContext | None
    code_challenge: str
    expires_at: float
    nonce: str | None = None


@dataclass(slots=True)
class _Refresh:
    client_id: str
    scope: str
    context: LaunchContext | None


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class AuthorizationServer:
    def __init__(
        self,
        *,
        issuer: str,
        fhir_base: str,
        practitioner: str,
        default_patient: str | None = None,
        access_token_ttl_s: int = 300,
        clients: list[RegisteredClient] | None = None,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.fhir_base = fhir_base
        self.practitioner = practitioner
        self.default_patient = default_patient
        self.access_token_ttl_s = access_token_ttl_s
        self.clients = {client.client_id: client for client in clients or []}
        self.key = RSAKey.generate_key(
            2048, parameters={"kid": secrets.token_hex(8), "alg": "RS256"}
        )
        self._launches: dict[str, LaunchContext] = {}
        self._codes: dict[str, _Grant] = {}
        self._refresh: dict[str, _Refresh] = {}
        self.client_authentication = ClientAuthentication(self.clients, self.token_url)

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    def register(self, client: RegisteredClient) -> None:
        self.clients[client.client_id] = client

    def public_pem(self) -> bytes:
        return self.key.as_pem(private=False)

    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)

    def new_launch(
        self,
        patient: str,
        encounter: str | None,
        user: str | None = None,
        app_context: str | None = None,
    ) -> str:
        launch = secrets.token_urlsafe(16)
        self._launches[launch] = LaunchContext(patient, encounter, user, app_context)
        return launch

    # --- authorize -------------------------------------------------------------------------------

    def authorize(self, params: dict[str, str]) -> str:
        """The redirect URL carrying a code (auto-approved); raises OAuthError when refused."""
        client = self.clients.get(params.get("client_id", ""))
        if client is None:
            raise OAuthError("unauthorized_client", "unknown client_id")
        redirect_uri = params.get("redirect_uri", "")
        if redirect_uri not in client.redirect_uris:
            raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
        if params.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "only response_type=code is supported")
        if params.get("aud") != self.fhir_base:
            raise OAuthError("invalid_request", f"aud must be {self.fhir_base}")
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            raise OAuthError("invalid_request", "PKCE with code_challenge_method=S256 is required")
        scopes = [
            s for s in params.get("scope", "").split() if not (client.read_only and _writes(s))
        ]
        scope = " ".join(scopes)
        context: LaunchContext | None = None
        if "launch" in scopes:
            context = self._launches.pop(params.get("launch", ""), None)
            if context is None:
                raise OAuthError("invalid_request", "unknown or used launch token")
        elif "launch/patient" in scopes:
            if self.default_patient is None:
                raise OAuthError("invalid_request", "no patient to choose for a standalone launch")
            context = LaunchContext(self.default_patient)
        code = secrets.token_urlsafe(32)
        self._codes[code] = _Grant(
            client_id=client.client_id,
            redirect_uri=redirect_uri,
            scope=scope,
            context=context,
            code_challenge=params["code_challenge"],
            expires_at=time.time() + CODE_TTL_S,
            nonce=params.get("nonce"),
        )
        # RFC 9207: the response names its issuer, so a client can tell mixed-up servers apart.
        query = {"code": code, "state": params.get("state", ""), "iss": self.issuer}
        return f"{redirect_uri}?{urlencode(query)}"

    # --- token -----------------------------------------------------------------------------------

    def access_token(
        self,
        client_id: str,
        scope: str,
        context: LaunchContext | None,
        ttl_s: int | None = None,
        audience: str | None = None,
    ) -> str:
        """An RS256 access token for the FHIR server (also used by tests to mint expired ones)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": audience or self.fhir_base,
            "sub": self.practitioner if context is not None else client_id,
            "client_id": client_id,
            "scope": scope,
            "iat": now,
            "exp": now + (self.access_token_ttl_s if ttl_s is None else ttl_s),
            "jti": secrets.token_hex(12),
        }
        if context is not None:
            claims["patient"] = context.patient.split("/")[-1]
        header = {"alg": "RS256", "kid": self.key.kid, "typ": "JWT"}
        return jwt.encode(header, claims, self.key)

    def _id_token(self, client_id: str, nonce: str | None, user: str | None) -> str:
        now = int(time.time())
        user = user or self.practitioner
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": user.split("/")[-1],
            "aud": client_id,
            "iat": now,
            "exp": now + self.access_token_ttl_s,
            "fhirUser": f"{self.fhir_base}/{user}",
        }
        if nonce:
            claims["nonce"] = nonce
        return jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key)

    def _issue(
        self, client: RegisteredClient, scope: str, context: LaunchContext | None, nonce: str | None
    ) -> dict[str, Any]:
        scopes = scope.split()
        answer: dict[str, Any] = {
            "access_token": self.access_token(
                client.client_id, scope, context, audience=client.audience
            ),
            "token_type": "Bearer",
            "expires_in": self.access_token_ttl_s,
            "scope": scope,
        }
        if context is not None:
            answer["patient"] = context.patient.split("/")[-1]
            if context.encounter:
                answer["encounter"] = context.encounter.split("/")[-1]
            answer["need_patient_banner"] = True
            if context.app_context:
                answer["appContext"] = context.app_context
            answer["smart_style_url"] = f"{self.issuer}/smart-style.json"
        if "openid" in scopes and "fhirUser" in scopes:
            user = context.user if context is not None else None
            answer["id_token"] = self._id_token(client.client_id, nonce, user)
        if "offline_access" in scopes or "online_access" in scopes:
            refresh = secrets.token_urlsafe(32)
            self._refresh[refresh] = _Refresh(client.client_id, scope, context)
            answer["refresh_token"] = refresh
        return answer

    def issue_for_tests(self, client_id: str, scope: str, patient: str) -> dict[str, Any]:
        """A token answer (with a refresh token when ``scope`` asks) as if ``client_id`` had
        completed a launch for ``patient``: for tests of what the app does with tokens."""
        return self._issue(self.clients[client_id], scope, LaunchContext(patient), None)

    async def token(self, form: dict[str, str], authorization: str | None) -> dict[str, Any]:
        """The token endpoint's answer; raises OAuthError with the status to answer with."""
        grant_type = form.get("grant_type")
        client = await self.client_authentication.authenticate(form, authorization)
        if grant_type == "authorization_code":
            grant = self._codes.pop(form.get("code", ""), None)
            if grant is None or grant.expires_at < time.time():
                raise OAuthError("invalid_grant", "unknown, used or expired code")
            if grant.client_id != client.client_id or grant.redirect_uri != form.get(
                "redirect_uri"
            ):
                raise OAuthError(
                    "invalid_grant", "code was issued to another client or redirect_uri"
                )
            if pkce_challenge(form.get("code_verifier", "")) != grant.code_challenge:
                raise OAuthError("invalid_grant", "PKCE code_verifier does not match")
            return self._issue(client, grant.scope, grant.context, grant.nonce)
        if grant_type == "refresh_token":
            refresh = self._refresh.pop(form.get("refresh_token", ""), None)
            if refresh is None or refresh.client_id != client.client_id:
                raise OAuthError("invalid_grant", "unknown or used refresh token")
            return self._issue(client, refresh.scope, refresh.context, None)
        if grant_type == "client_credentials":
            if client.kind != "private_key_jwt":
                raise OAuthError("unauthorized_client", "backend services use private_key_jwt")
            scope = " ".join(s for s in form.get("scope", "").split() if s.startswith("system/"))
            return self._issue(client, scope, None, None)
        raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
