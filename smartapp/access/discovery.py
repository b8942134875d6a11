"""SMART discovery: an EHR's authorization endpoints, trusted only as its registration allows.

Mix-up defence: the endpoints discovery reports are used only when they lie on the issuer's own
origin (or the EHR's registration names them), and an authorization endpoint with a query or
fragment is refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import httpx
from pydantic import BaseModel, ConfigDict, Field

from smartapp.access.smart_errors import SetupError, SmartError
from smartapp.core.errors import logged
from smartapp.core.registrations import ClientRegistration, origin_of

OAUTH_URIS = "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris"


class SmartConfiguration(BaseModel):
    model_config = ConfigDict(extra="ignore")

    issuer: str | None = None
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str | None = None
    capabilities: list[str] = Field(default_factory=list)
    scopes_supported: list[str] = Field(default_factory=list)
    code_challenge_methods_supported: list[str] = Field(default_factory=list)
    authorization_response_iss_parameter_supported: bool = False


async def _discovered(http: httpx.AsyncClient, iss: str) -> SmartConfiguration:
    """``{iss}/.well-known/smart-configuration``, else the CapabilityStatement's oauth-uris."""
    base = iss.rstrip("/")
    try:
        response = await http.get(f"{base}/.well-known/smart-configuration")
        if response.status_code == 200:
            return SmartConfiguration.model_validate(response.json())
        statement = (await http.get(f"{base}/metadata")).json()
    except (httpx.HTTPError, ValueError) as error:
        error_id = logged(f"discovery of {iss}", repr(error))
        raise SmartError(
            f"cannot read the SMART configuration of the EHR (error {error_id})"
        ) from error
    for rest in statement.get("rest", []) if isinstance(statement, dict) else []:
        for extension in rest.get("security", {}).get("extension", []):
            if extension.get("url") != OAUTH_URIS:
                continue
            uris = {e.get("url"): e.get("valueUri") for e in extension.get("extension", [])}
            if uris.get("authorize") and uris.get("token"):
                return SmartConfiguration(
                    authorization_endpoint=uris["authorize"], token_endpoint=uris["token"]
                )
    raise SmartError("the EHR advertises no SMART authorization endpoints")


def trusted_configuration(
    found: SmartConfiguration, registration: ClientRegistration
) -> SmartConfiguration:
    """Discovery's answer as the app may use it: endpoints the registration names replace the
    discovered ones; any other endpoint must lie on the issuer's origin."""
    home = origin_of(registration.issuer)
    trusted_origins = {home, *registration.named_origins()}
    named = {
        "authorization_endpoint": registration.authorization_endpoint,
        "token_endpoint": registration.token_endpoint,
        "jwks_uri": registration.jwks_uri,
    }
    values: dict[str, Any] = {}
    for name, value in named.items():
        discovered = getattr(found, name)
        if value is None and discovered is not None and origin_of(discovered) != home:
            raise SetupError(
                f"the EHR's {name.replace('_', ' ')} is not on its own origin ({home}); "
                "refused unless the EHR's registration names it"
            )
        values[name] = value or discovered
    authorize = urlparse(values["authorization_endpoint"])
    if authorize.query or authorize.fragment or authorize.scheme not in {"https", "http"}:
        raise SetupError("the EHR's authorization endpoint has a query or fragment; refused")
    issuer = registration.openid_issuer or found.issuer
    if issuer is not None and origin_of(issuer) not in trusted_origins:
        raise SetupError("the EHR's OpenID issuer is not on a trusted origin; refused")
    values["issuer"] = issuer or registration.issuer
    return found.model_copy(update=values)


async def discover(http: httpx.AsyncClient, registration: ClientRegistration) -> SmartConfiguration:
    """The SMART configuration of a registered EHR, checked against its registration."""
    return trusted_configuration(await _discovered(http, registration.issuer), registration)
