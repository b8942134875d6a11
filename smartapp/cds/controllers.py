"""CDS Hooks 2.0 endpoints: discovery, and the ``encounter-discharge`` service.

Discovery is public (it names the service and its prefetch). A service call is answered only
for a registered EHR's signed JWT (``smartapp.cds.caller``); a refused call gets its HTTP status
and a JSON body ``{"error", "error_description"}`` (with ``WWW-Authenticate`` for a JWT that
does not hold), and nothing is asked of the EHR's FHIR server before the caller is known.
"""

from __future__ import annotations

import json
from typing import Any

from litestar import Controller, Request, get, post
from litestar.response import Response
from pydantic import ValidationError

from pipeline.text.rendering import render
from smartapp.cds.caller import HookRefusedError, verified_caller
from smartapp.cds.discharge import SERVICE_ID, HookCard, Services, discharge_card
from smartapp.cds.hook_request import HookRequest
from smartapp.core.metrics import HOOK_CALLS
from smartapp.core.settings import Settings
from smartapp.state import Jobs, Provenote

# A hook call with its prefetch (the Patient and the Encounter) fits well inside this.
HOOK_BODY_BYTES = 256 * 1024


def _parsed(body: bytes) -> HookRequest:
    try:
        return HookRequest.model_validate_json(body)
    except ValidationError as invalid:
        where = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
            for error in invalid.errors(include_input=False)
        )
        raise HookRefusedError(400, "invalid_request", f"not a valid hook call ({where})") from None


def _cards(settings: Settings, card: HookCard | None, writes: bool) -> Response[Any]:
    page = render(
        "cds/cards.json.j2",
        card=card,
        writes=writes,
        base=settings.base_url,
        launch_url=settings.launch_url,
    )
    HOOK_CALLS.labels(card.kind if card else "no_card").inc()
    return Response(json.loads(page), media_type="application/json")


def service_url(settings: Settings) -> str:
    """The service's URL: the ``aud`` an EHR's JWT must carry."""
    return f"{settings.base_url.rstrip('/')}/cds-services/{SERVICE_ID}"


class CdsController(Controller):
    path = "/cds-services"

    @get("/")
    async def discovery(self, provenote: Provenote) -> Response[Any]:
        page = render("cds/discovery.json.j2", service_id=SERVICE_ID)
        return Response(json.loads(page), media_type="application/json")

    @post(f"/{SERVICE_ID}", status_code=200, request_max_body_size=HOOK_BODY_BYTES)
    async def discharge(
        self, provenote: Provenote, jobs: Jobs, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        settings = provenote.settings
        try:
            registration = await verified_caller(
                request.headers.get("authorization"),
                service_url(settings),
                settings,
                provenote.hook_keys,
                provenote.database,
            )
            call = _parsed(await request.body())
            services = Services(settings, provenote.access, provenote.store, provenote.drafts, jobs)
            card = await discharge_card(services, registration, call)
        except HookRefusedError as refusal:
            HOOK_CALLS.labels("refused").inc()
            headers = (
                {"www-authenticate": f'Bearer error="{refusal.error}"'}
                if refusal.status == 401
                else {}
            )
            return Response(refusal.body(), status_code=refusal.status, headers=headers)
        return _cards(settings, card, registration.predraft_writes)
