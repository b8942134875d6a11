"""How Provenote is registered with an EHR, and how issuers and origins are compared."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

ClientAuth = Literal["public", "client_secret_basic", "private_key_jwt"]
SigningAlg = Literal["RS384", "ES384"]
# Which refresh scope a launch asks for: "auto" asks online_access where the server lists it,
# else offline_access where listed (SMART App Launch 2.2), so a session can outlive its first
# access token; "none" asks for no refresh token at all.
RefreshAccess = Literal["auto", "online_access", "offline_access", "none"]


def normalise_issuer(iss: str) -> str:
    """An issuer as compared everywhere: without a trailing slash."""
    return iss.strip().rstrip("/")


class ClientRegistration(BaseModel):
    """How Provenote is registered with one EHR: its credentials are only ever sent there.

    Endpoints named here are trusted as they are; endpoints that discovery reports must lie on
    the issuer's own origin (a mix-up defence), so an EHR whose authorization server lives
    elsewhere names them here.
    """

    model_config = ConfigDict(extra="forbid")

    issuer: str
    client_id: str
    client_auth: ClientAuth = "public"
    client_secret: SecretStr | None = None
    # PEM private key for private_key_jwt; default: the app's own key (signing_key_file).
    signing_key_file: Path | None = None
    signing_alg: SigningAlg = "RS384"
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    jwks_uri: str | None = None
    # The ``iss`` of this EHR's id_tokens, when it is not the one discovery reports.
    openid_issuer: str | None = None
    # The clinical scopes to ask this EHR for, when it refuses a request holding any scope it
    # has not registered (e.g. ["patient/*.read"] for read-only); default: what the app needs.
    scopes: list[str] | None = None
    refresh: RefreshAccess = "auto"
    # SMART Backend Services (drafting with no user: a hook without fhirAuthorization,
    # pre-drafting, the API's $summarize): the client id registered for it, when the EHR keeps
    # backend clients apart from the launch's; always private_key_jwt. Default: client_id.
    backend_client_id: str | None = None
    # CDS Hooks (smartapp.cds): whether this EHR may call the discharge service, the ``iss`` of
    # its hook JWTs (default: the FHIR base) and where it publishes their keys (a JWK Set).
    cds_hooks: bool = False
    cds_issuer: str | None = None
    cds_jwks_uri: str | None = None
    # Pre-drafting (``provenote predraft``): draft this EHR's in-progress inpatient stays ahead.
    predraft: bool = False
    # Stays at these locations (``Location/<id>``) are drafted ahead even before a discharge is
    # recorded on them.
    discharge_locations: list[str] = Field(default_factory=list)
    # A draft made ahead (by a hook or pre-drafting) is written to the chart when a physician
    # first opens it; True writes it as soon as it is made.
    predraft_writes: bool = False

    @model_validator(mode="after")
    def _normalised(self) -> ClientRegistration:
        self.issuer = normalise_issuer(self.issuer)
        if self.client_auth == "client_secret_basic" and self.client_secret is None:
            raise ValueError(f"{self.issuer}: client_secret_basic needs a client_secret")
        return self

    def named_origins(self) -> set[str]:
        """Origins this registration trusts beyond the issuer's own."""
        named = (self.authorization_endpoint, self.token_endpoint, self.jwks_uri, self.cds_jwks_uri)
        return {origin_of(url) for url in named if url}

    @property
    def hook_issuer(self) -> str:
        """The ``iss`` this EHR's CDS Hooks JWTs carry."""
        return normalise_issuer(self.cds_issuer or self.issuer)

    @property
    def acts_as_itself(self) -> bool:
        """Whether Provenote can reach this EHR as itself (SMART Backend Services: a backend
        client, or a private_key_jwt client that may ask client_credentials)."""
        return self.backend_client_id is not None or self.client_auth == "private_key_jwt"

    def backend(self) -> ClientRegistration:
        """The registration Provenote acts under without a user (SMART Backend Services)."""
        if self.backend_client_id is None:
            return self
        update = {"client_id": self.backend_client_id, "client_auth": "private_key_jwt"}
        return self.model_copy(update=update)


def callback_id(issuer: str) -> str:
    """The path segment of an EHR's callback: stable for its issuer, and no secret."""
    return hashlib.sha256(normalise_issuer(issuer).encode("utf-8")).hexdigest()[:16]


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, with the default port made explicit."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    port = parsed.port or {"http": 80, "https": 443}.get(scheme, 0)
    return f"{scheme}://{(parsed.hostname or '').lower()}:{port}"
