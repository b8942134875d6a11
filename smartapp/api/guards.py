"""Who may call the FHIR API: a bearer token from the configured issuer with the scope each
route declares (``opt={"scope": (resource type, action)}``); ``metadata`` is public."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from smartapp.api.auth import TokenVerifier

VERIFIER = "provenote_api_verifier"
CALLER = "api_client"


async def api_token(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """Verify the token and its scope, and keep who called on the request (``CALLER``); an
    ApiAuthError (401 or 403) otherwise, answered as an OperationOutcome."""
    scope = handler.opt.get("scope")
    if scope is None:
        return
    verifier: TokenVerifier = getattr(connection.app.state, VERIFIER)
    client = await verifier.verify(connection.headers.get("authorization"))
    resource_type, action = scope
    client.require(resource_type, action)
    connection.state[CALLER] = client
