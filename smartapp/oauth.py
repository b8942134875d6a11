"""SMART App Launch 2.2, client side: discovery, PKCE, scopes, client authentication, tokens.

The client assertion for ``private_key_jwt`` is built here rather than by a library default:
SMART requires RS384 or ES384, a fresh ``jti`` for every assertion and an ``exp`` no more than
five minutes ahead, which generic OAuth libraries do not enforce.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import uuid
from typing import Any
from urllib.parse import urlencode

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey
from pydantic import BaseModel, ConfigDict, Field

from smartapp.settings import AppSettings

OAUTH_URIS = "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME_S = 300
# What the pipeline reads, and what write-back writes.
READ_TYPES = (
    "Patient",
    "Encounter",
    "DocumentReference",
    "Binary",
    "MedicationRequest",
    "Medication",
    "DiagnosticReport",
    "Observation",
    "Condition",
    "AllergyIntolerance",
    "Procedure",
    "Practitioner",
    "Composition",
    "Provenance",
    "Device",
)
WRITE_TYPES = ("Composition", "DocumentReference", "Provenance", "Device")


class SmartError(Exception):
    """A launch step failed; the message is safe to show to the user."""


class SmartConfiguration(BaseModel):
    model_config = ConfigDict(extra="ignore")

    issuer: str | None = None
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str | None = None
    capabilities: list[str] = Field(default_factory=list)
    scopes_supported: list[str] = Field(default_factory=list)
    code_challenge_methods_supported: list[str] = Field(default_factory=list)


class TokenResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

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


async def discover(http: httpx.AsyncClient, iss: str) -> SmartConfiguration:
    """``{iss}/.well-known/smart-configuration``, else the CapabilityStatement's oauth-uris."""
    base = iss.rstrip("/")
    try:
        response = await http.get(f"{base}/.well-known/smart-configuration")
        if response.status_code == 200:
            return SmartConfiguration.model_validate(response.json())
        statement = (await http.get(f"{base}/metadata")).json()
    except (httpx.HTTPError, ValueError) as error:
        raise SmartError(f"cannot read the SMART configuration of {iss}: {error}") from error
    for rest in statement.get("rest", []):
        for extension in rest.get("security", {}).get("extension", []):
            if extension.get("url") != OAUTH_URIS:
                continue
            uris = {e.get("url"): e.get("valueUri") for e in extension.get("extension", [])}
            if uris.get("authorize") and uris.get("token"):
                return SmartConfiguration(
                    authorization_endpoint=uris["authorize"], token_endpoint=uris["token"]
                )
    raise SmartError(f"{iss} advertises no SMART authorization endpoints")


def new_pkce() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge)."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def requested_scopes(config: SmartConfiguration, *, ehr_launch: bool, offline: bool) -> str:
    """v2 scopes (``.rs``, ``.cu``) when the server lists ``permission-v2``, else v1."""
    v2 = "permission-v2" in config.capabilities
    read, write = ("rs", "cu") if v2 else ("read", "write")
    scopes = [f"patient/{kind}.{read}" for kind in READ_TYPES]
    scopes += [f"patient/{kind}.{write}" for kind in WRITE_TYPES]
    scopes += ["openid", "fhirUser", "launch" if ehr_launch else "launch/patient"]
    scopes.append("offline_access" if offline else "online_access")
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
    settings: AppSettings, key: RSAKey | ECKey | None, token_url: str
) -> tuple[dict[str, str], httpx.BasicAuth | None]:
    if settings.client_auth == "private_key_jwt":
        if key is None:
            raise SmartError("private_key_jwt needs the app's signing key")
        assertion = client_assertion(key, settings.signing_alg, settings.client_id, token_url)
        return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion}, None
    if settings.client_auth == "client_secret_basic":
        secret = settings.client_secret.get_secret_value() if settings.client_secret else ""
        return {}, httpx.BasicAuth(settings.client_id, secret)
    return {"client_id": settings.client_id}, None


async def _token_request(
    http: httpx.AsyncClient,
    config: SmartConfiguration,
    settings: AppSettings,
    key: RSAKey | ECKey | None,
    form: dict[str, str],
) -> TokenResponse:
    extra, auth = _client_authentication(settings, key, config.token_endpoint)
    try:
        response = await http.post(
            config.token_endpoint,
            data=form | extra,
            auth=auth,  # type: ignore[arg-type]
            headers={"accept": "application/json"},
        )
    except httpx.HTTPError as error:
        raise SmartError(f"the token endpoint did not answer: {error}") from error
    if response.status_code != 200:
        try:
            detail = response.json()
            reason = f"{detail.get('error')}: {detail.get('error_description', '')}"
        except ValueError:
            reason = f"HTTP {response.status_code}"
        raise SmartError(f"the token request was refused ({reason})")
    return TokenResponse.model_validate(response.json())


async def exchange_code(
    http: httpx.AsyncClient,
    config: SmartConfiguration,
    settings: AppSettings,
    key: RSAKey | ECKey | None,
    *,
    code: str,
    verifier: str,
) -> TokenResponse:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": settings.redirect_uri,
        "code_verifier": verifier,
    }
    return await _token_request(http, config, settings, key, form)


async def refresh_tokens(
    http: httpx.AsyncClient,
    config: SmartConfiguration,
    settings: AppSettings,
    key: RSAKey | ECKey | None,
    refresh_token: str,
) -> TokenResponse:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    return await _token_request(http, config, settings, key, form)


async def client_credentials(
    http: httpx.AsyncClient,
    config: SmartConfiguration,
    settings: AppSettings,
    key: RSAKey | ECKey | None,
    scope: str,
) -> TokenResponse:
    """A SMART Backend Services token: no user, ``system/`` scopes, the app's own credentials."""
    form = {"grant_type": "client_credentials", "scope": scope}
    return await _token_request(http, config, settings, key, form)


def system_scopes(config: SmartConfiguration) -> str:
    """What a backend job asks for: read the record, write the draft back."""
    v2 = "permission-v2" in config.capabilities
    read, write = ("rs", "cu") if v2 else ("read", "write")
    scopes = [f"system/{kind}.{read}" for kind in READ_TYPES]
    scopes += [f"system/{kind}.{write}" for kind in WRITE_TYPES]
    return " ".join(scopes)


async def validate_id_token(
    http: httpx.AsyncClient, config: SmartConfiguration, id_token: str, client_id: str
) -> dict[str, Any]:
    """The id_token's claims, after checking signature (server JWKS), iss, aud and exp."""
    if not config.jwks_uri:
        raise SmartError("the server publishes no JWKS to check the id_token with")
    try:
        keys = KeySet.import_key_set((await http.get(config.jwks_uri)).json())
        token = jwt.decode(id_token, keys, algorithms=["RS256", "RS384", "ES256", "ES384"])
        requests: dict[str, Any] = {
            "aud": {"essential": True, "value": client_id},
            "exp": {"essential": True},
        }
        if config.issuer:
            requests["iss"] = {"essential": True, "value": config.issuer}
        jwt.JWTClaimsRegistry(**requests).validate(token.claims)
    except (JoseError, httpx.HTTPError, ValueError) as error:
        raise SmartError(f"the id_token is not valid: {error}") from error
    return dict(token.claims)
