"""The OpenID id_token of a launch: signature (the EHR's JWKS), iss, aud/azp, exp and nonce."""

from __future__ import annotations

from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from smartapp.access.discovery import SmartConfiguration
from smartapp.access.smart_errors import SmartError
from smartapp.core.errors import logged

ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "ES256", "ES384"]


def _fits(key: Any, alg: str) -> bool:
    return (key.key_type == "RSA" and alg.startswith("RS")) or (
        key.key_type == "EC" and alg.startswith("ES")
    )


def _decode_id_token(id_token: str, keys: KeySet) -> Any:
    """Verify the signature: by ``kid`` when the header names one, else against every key of
    the set that fits the algorithm (EHRs rotate keys and not all of them send a kid)."""
    header = extract_compact(id_token.encode("ascii")).protected
    alg = header.get("alg")
    if alg not in ID_TOKEN_ALGORITHMS:
        raise SmartError("the id_token is not valid: its algorithm is not accepted")
    if header.get("kid"):
        return jwt.decode(id_token, keys, algorithms=ID_TOKEN_ALGORITHMS)
    for key in keys:
        if _fits(key, alg):
            try:
                return jwt.decode(id_token, key, algorithms=[alg])
            except JoseError:
                continue
    raise SmartError("the id_token is not valid: no key of the EHR verifies its signature")


async def validate_id_token(
    http: httpx.AsyncClient,
    config: SmartConfiguration,
    id_token: str,
    client_id: str,
    nonce: str,
) -> dict[str, Any]:
    """The id_token's claims, after checking signature (server JWKS), iss, aud (and azp when
    there are several audiences), exp and the launch's nonce."""
    if not config.jwks_uri:
        raise SmartError("the EHR publishes no JWKS to check the id_token with")
    if not config.issuer:
        raise SmartError("the EHR names no issuer to check the id_token against")
    try:
        keys = KeySet.import_key_set((await http.get(config.jwks_uri)).json())
        token = _decode_id_token(id_token, keys)
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": config.issuer},
            aud={"essential": True, "value": client_id},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        ).validate(token.claims)
    except (JoseError, httpx.HTTPError, ValueError) as error:
        error_id = logged("id_token", repr(error))
        raise SmartError(f"the id_token is not valid (error {error_id})") from error
    claims = dict(token.claims)
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise SmartError("the id_token is not valid: several audiences and azp is not this app")
    return claims
