"""SMART App Launch 2.2, client side: PKCE, scopes, client authentication, tokens.

The client assertion for ``private_key_jwt`` is built here rather than by a library default:
SMART requires RS384 or ES384, a fresh ``jti`` for every assertion and an ``exp`` no more than
five minutes ahead, which generic OAuth libraries do not enforce. Discovery and its mix-up
defences are ``smartapp.access.discovery``; the id_token's checks ``smartapp.launch.id_tokens``;
the callback's ``iss`` is checked where the server promises it (RFC 9207).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey
from pydantic import BaseModel, ConfigDict, Field

from fhir_mapping.resources import RECORD_TYPES
from smartapp.access.discovery import SmartConfiguration
from smartapp.access.smart_errors import SETUP_ERROR_CODES, SetupError, SmartError, oauth_error_code
from smartapp.core.errors import logged, logged_answer
from smartapp.core.registrations import ClientRegistration

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME_S = 300
# What the pipeline reads, and what write-back writes.
READ_TYPES = (
    "Patient",
    *RECORD_TYPES,
    "Binary",
    "Medication",
    "Practitioner",
    "Composition",
    "Provenance",
)
WRITE_TYPES = ("Composition", "DocumentReference", "Provenance", "Device")


class TokenResponse(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    access_token: str
    token_type: str = "Bearer"
    expires_in: int | None = None
    scope: str = ""
    refresh_token: str | None = None
    id_token: str | None = None
    patient: str | None = None
    encounter: str | None = None
    need_patient_banner: bool | None = None
    smart_style_url: str | None = None
    # A CDS Hooks card's link context, passed through by the EHR (CDS Hooks 2.0, SMART links).
    app_context: str | None = Field(None, alias="appContext")


def new_pkce() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge)."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _uses_v2(config: SmartConfiguration) -> bool:
    """v2 scopes when the server says so: ``permission-v2``, or v2 forms in its scope list."""
    if "permission-v2" in config.capabilities:
        return True
    if "permission-v1" in config.capabilities:
        return False
    return any(
        re.fullmatch(r"(patient|user|system)/[\w*]+\.c?r?u?d?s?", scope)
        for scope in config.scopes_supported
    )


def _offered(config: SmartConfiguration, scope: str) -> bool:
    """Context scopes are asked for only where listed (a listing is not exhaustive, so the
    clinical scopes the app needs are always asked for)."""
    return not config.scopes_supported or scope in config.scopes_supported


def refresh_scope(config: SmartConfiguration, registration: ClientRegistration) -> str | None:
    """The scope that brings a refresh token, so that a session outlives its first access token:
    online_access where the server lists it, else offline_access where listed (or online_access
    from a server that lists nothing), unless the registration chooses one or none."""
    if registration.refresh == "none":
        return None
    if registration.refresh != "auto":
        return registration.refresh if _offered(config, registration.refresh) else None
    for scope in ("online_access", "offline_access"):
        if scope in config.scopes_supported:
            return scope
    return None if config.scopes_supported else "online_access"


def requested_scopes(
    config: SmartConfiguration, registration: ClientRegistration, *, ehr_launch: bool
) -> str:
    """What the app needs, in the form the server advertises (v2 ``.rs``/``.cu``, else v1), or
    the clinical scopes the registration narrows it to."""
    read, write = ("rs", "cu") if _uses_v2(config) else ("read", "write")
    if registration.scopes is not None:
        scopes = list(registration.scopes)
    else:
        scopes = [f"patient/{kind}.{read}" for kind in READ_TYPES]
        scopes += [f"patient/{kind}.{write}" for kind in WRITE_TYPES]
    scopes += ["openid", "fhirUser"]
    if ehr_launch:
        scopes.append("launch")
    else:
        scopes += [s for s in ("launch/patient", "launch/encounter") if _offered(config, s)]
    refresh = refresh_scope(config, registration)
    if refresh is not None:
        scopes.append(refresh)
    return " ".join(scopes)


def authorize_url(
    config: SmartConfiguration,
    *,
    client_id: str,
    redirect_uri: str,
    scope: str,
    state: str,
    aud: str,
    challenge: str,
    launch: str | None,
    nonce: str,
) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": state,
        "aud": aud,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "nonce": nonce,
    }
    if launch:
        params["launch"] = launch
    return f"{config.authorization_endpoint}?{urlencode(params)}"


def client_assertion(key: RSAKey | ECKey, alg: str, client_id: str, token_url: str) -> str:
    """A private_key_jwt assertion: RS384/ES384, fresh jti, exp five minutes ahead."""
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": token_url,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_S,
    }
    return jwt.encode({"alg": alg, "kid": key.kid, "typ": "JWT"}, claims, key, algorithms=[alg])


def _client_authentication(
    registration: ClientRegistration, key: RSAKey | ECKey | None, token_url: str
) -> tuple[dict[str, str], httpx.BasicAuth | None]:
    if registration.client_auth == "private_key_jwt":
        if key is None:
            raise SetupError("private_key_jwt needs the app's signing key")
        assertion = client_assertion(
            key, registration.signing_alg, registration.client_id, token_url
        )
        return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion}, None
    if registration.client_auth == "client_secret_basic":
        assert registration.client_secret is not None
        return {}, httpx.BasicAuth(
            registration.client_id, registration.client_secret.get_secret_value()
        )
    return {"client_id": registration.client_id}, None


@dataclass(frozen=True, slots=True)
class TokenEndpoint:
    """An EHR's token endpoint as the app calls it: over which HTTP client, as which
    registration, authenticated with which key. Every grant is one form posted through it, so
    the grants differ only in their form."""

    http: httpx.AsyncClient
    config: SmartConfiguration
    registration: ClientRegistration
    key: RSAKey | ECKey | None

    async def exchange_code(self, *, code: str, verifier: str, redirect_uri: str) -> TokenResponse:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        return await self._request(form)

    async def refresh(self, refresh_token: str) -> TokenResponse:
        return await self._request({"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def client_credentials(self, scope: str) -> TokenResponse:
        """A SMART Backend Services token: no user, ``system/`` scopes, the app's own
        credentials."""
        return await self._request({"grant_type": "client_credentials", "scope": scope})

    async def _request(self, form: dict[str, str]) -> TokenResponse:
        token_url = self.config.token_endpoint
        extra, auth = _client_authentication(self.registration, self.key, token_url)
        try:
            response = await self.http.post(
                token_url,
                data=form | extra,
                auth=auth,  # type: ignore[arg-type]
                headers={"accept": "application/json"},
            )
        except httpx.HTTPError as error:
            error_id = logged("token endpoint", repr(error))
            raise SmartError(
                f"the EHR's token endpoint did not answer (error {error_id})"
            ) from error
        if response.status_code != 200:
            error_id = logged_answer(
                f"token endpoint: HTTP {response.status_code}",
                response.content,
                response.headers.get("content-type"),
            )
            try:
                code = oauth_error_code(response.json().get("error"))
            except (ValueError, AttributeError):
                code = None
            reason = f"HTTP {response.status_code}" + (f", {code}" if code else "")
            refused = SetupError if code in SETUP_ERROR_CODES else SmartError
            raise refused(f"the token request was refused ({reason}; error {error_id})")
        try:
            return TokenResponse.model_validate(response.json())
        except ValueError as error:
            error_id = logged_answer(
                "token endpoint: unusable answer",
                response.content,
                response.headers.get("content-type"),
            )
            raise SmartError(f"the EHR's token answer is not usable (error {error_id})") from error


def system_scopes(config: SmartConfiguration) -> str:
    """What a backend job asks for: read the record, write the draft back."""
    read, write = ("rs", "cu") if _uses_v2(config) else ("read", "write")
    scopes = [f"system/{kind}.{read}" for kind in READ_TYPES]
    scopes += [f"system/{kind}.{write}" for kind in WRITE_TYPES]
    return " ".join(scopes)
