"""CDS Hooks 2.0 endpoints: discovery, the ``encounter-discharge`` service and its feedback.

Discovery is public (it names the service, its prefetch and what its card's link needs). A
service call or a feedback is answered only for a registered EHR's signed JWT
(``smartapp.cds.caller``); a refused call gets its HTTP status and a JSON body ``{"error",
"error_description"}`` (with ``WWW-Authenticate`` for a JWT that does not hold), and nothing is
asked of the EHR's FHIR server before the caller is known.
"""

from __future__ import annotations

import json
from typing import Any

from litestar import Controller, Request, get, post
from litestar.response import Response
from pydantic import ValidationError

from pipeline.text.rendering import render
from smartapp.access.oauth import READ_TYPES, WRITE_TYPES
from smartapp.cds.caller import HookRefusedError, invalid_request, verified_caller
from smartapp.cds.discharge import SERVICE_ID, HookCard, Services, discharge_card
from smartapp.cds.feedback import (
    OVERRIDE_REASONS,
    OVERRIDE_SYSTEM,
    parsed_feedback,
    record_card,
    record_feedback,
)
from smartapp.cds.hook_request import HookRequest
from smartapp.core.errors import logged
from smartapp.core.metrics import HOOK_CALLS
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings
from smartapp.state import Jobs, Provenote

# A hook call with its prefetch (the Patient and the Encounter) fits well inside this.
HOOK_BODY_BYTES = 256 * 1024
FEEDBACK_BODY_BYTES = 256 * 1024


def _parsed(body: bytes) -> HookRequest:
    try:
        return HookRequest.model_validate_json(body)
    except ValidationError as invalid:
        raise invalid_request(invalid, "hook call") from None


def _cards(settings: Settings, card: HookCard | None, writes: bool) -> Response[Any]:
    page = render(
        "cds/cards.json.j2",
        card=card,
        writes=writes,
        base=settings.base_url,
        launch_url=settings.launch_url,
        override_system=OVERRIDE_SYSTEM,
        override_reasons=OVERRIDE_REASONS,
    )
    HOOK_CALLS.labels(card.kind if card else "no_card").inc()
    return Response(json.loads(page), media_type="application/json")


def _refusal(refusal: HookRefusedError) -> Response[Any]:
    headers = (
        {"www-authenticate": f'Bearer error="{refusal.error}"'} if refusal.status == 401 else {}
    )
    return Response(refusal.body(), status_code=refusal.status, headers=headers)


def service_url(settings: Settings) -> str:
    """The service's URL: the ``aud`` an EHR's JWT must carry."""
    return f"{settings.base_url.rstrip('/')}/cds-services/{SERVICE_ID}"


async def _caller(
    provenote: Provenote, request: Request[Any, Any, Any], *audiences: str
) -> ClientRegistration:
    """The EHR that signed this request for one of ``audiences``."""
    return await verified_caller(
        request.headers.get("authorization"),
        audiences,
        provenote.settings,
        provenote.hook_keys,
        provenote.database,
    )


class CdsController(Controller):
    path = "/cds-services"

    @get("/")
    async def discovery(self, provenote: Provenote) -> Response[Any]:
        page = render(
            "cds/discovery.json.j2",
            service_id=SERVICE_ID,
            read_types=READ_TYPES,
            write_types=WRITE_TYPES,
        )
        return Response(json.loads(page), media_type="application/json")

    @post(f"/{SERVICE_ID}", status_code=200, request_max_body_size=HOOK_BODY_BYTES)
    async def discharge(
        self, provenote: Provenote, jobs: Jobs, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        settings = provenote.settings
        try:
            registration = await _caller(provenote, request, service_url(settings))
            call = _parsed(await request.body())
            services = Services(settings, provenote.access, provenote.store, provenote.drafts, jobs)
            card = await discharge_card(services, registration, call)
        except HookRefusedError as refusal:
            HOOK_CALLS.labels("refused").inc()
            return _refusal(refusal)
        if card is not None:
            try:
                await record_card(provenote.database, registration.hook_issuer, card)
            except Exception as failure:  # the card still goes out; only its feedback is lost
                logged("recording a CDS card", repr(failure))
        return _cards(settings, card, registration.predraft_writes)

    @post(f"/{SERVICE_ID}/feedback", status_code=200, request_max_body_size=FEEDBACK_BODY_BYTES)
    async def feedback(
        self, provenote: Provenote, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        """CDS Hooks feedback: what the physician did with a card (accepted, or overridden
        with a reason), recorded whole or refused whole; 200 with an empty body."""
        try:
            # The feedback's JWT may name the service's URL or the feedback endpoint's.
            url = service_url(provenote.settings)
            registration = await _caller(provenote, request, url, f"{url}/feedback")
            entries = parsed_feedback(await request.body())
            await record_feedback(provenote.database, registration.hook_issuer, entries)
        except HookRefusedError as refusal:
            return _refusal(refusal)
        return Response(b"", status_code=200)
