"""What a launched page may ask of its session: the launch context, a whole-record pull (for the
page's counts; a few a minute), and the app's public keys (``private_key_jwt``)."""

from __future__ import annotations

import time
from typing import Any

from litestar import Controller, Request, get
from litestar.response import Response

from fhir_mapping.resources import type_counts
from smartapp.core.keys import public_jwks, signing_key
from smartapp.ehr.fhir_client import FhirError
from smartapp.ehr.pull import pull_record
from smartapp.state import AppState, Provenote


def _record_pull_wait(provenote: AppState, session_id: str) -> int | None:
    """Seconds until this session may pull its record again, or None (and the pull counted):
    each pull is dozens of requests to the EHR, so a session gets a few a minute."""
    now = time.monotonic()
    recent = [t for t in provenote.record_pulls.get(session_id, []) if now - t < 60]
    if len(recent) >= provenote.settings.record_pulls_per_minute:
        provenote.record_pulls[session_id] = recent
        return max(1, int(60 - (now - recent[0])) + 1)
    provenote.record_pulls[session_id] = [*recent, now]
    return None


class LaunchContextController(Controller):
    @get("/api/context")
    async def context_api(
        self, provenote: Provenote, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        context = await provenote.store.context(request.cookies.get(provenote.session_cookie))
        if context is None:
            return Response({"error": "no launch in this session"}, status_code=401)
        return Response(context.model_dump())

    @get("/api/record")
    async def record_api(
        self, provenote: Provenote, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        session_id = request.cookies.get(provenote.session_cookie)
        context = await provenote.store.context(session_id)
        if context is None or session_id is None or not context.patient:
            return Response(
                {"error": "no patient in this session's launch context"}, status_code=401
            )
        wait = _record_pull_wait(provenote, session_id)
        if wait is not None:
            return Response(
                {"error": "too many record pulls for this session; try again shortly"},
                status_code=429,
                headers={"retry-after": str(wait)},
            )
        client = provenote.access.client_for(session_id, context.iss)
        try:
            bundle = await pull_record(client, context.patient, context.encounter)
        except FhirError as failure:
            return Response({"error": str(failure)}, status_code=502)
        return Response(
            {
                "patient": context.patient,
                "encounter": context.encounter,
                "counts": type_counts(bundle),
            }
        )

    @get("/.well-known/jwks.json")
    async def jwks(self, provenote: Provenote) -> dict[str, Any]:
        settings = provenote.settings
        registrations = [settings.registration_for(iss) for iss in settings.allowed_issuers]
        keys = [
            provenote.access.key_for(client)
            for registration in [*registrations, *settings.registrations]
            if registration
            for client in (registration, registration.backend())
        ]
        if settings.client_auth == "private_key_jwt":
            keys.append(signing_key(settings))
        return public_jwks([key for key in keys if key is not None])
