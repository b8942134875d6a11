"""The SMART App Launch (EHR and standalone), the launch context, sign-out and the app's keys.

``/launch`` accepts only a configured EHR (default deny), discovers it, and sends the browser to
authorize with PKCE, a nonce and a pending launch bound to this browser; ``/callback`` checks
the answer came from that EHR, exchanges the code, validates the id_token, opens a session
whose id only the server chose, and starts (or joins) the stay's drafting job.
"""

from __future__ import annotations

import secrets
import time
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Response

from fhir_mapping.resources import type_counts
from smartapp.core.csrf import FIELD, csrf_valid
from smartapp.core.errors import log, logged_answer
from smartapp.core.keys import public_jwks, signing_key
from smartapp.core.limits import SMALL_FORM_BYTES
from smartapp.core.responses import error_page, setup_problem
from smartapp.ehr.fhir_client import FhirError
from smartapp.ehr.pull import pull_record
from smartapp.launch import callback as steps
from smartapp.launch.cookies import cookie
from smartapp.launch.discovery import discover
from smartapp.launch.oauth import authorize_url, new_pkce, requested_scopes
from smartapp.launch.relaunch import open_or_draft
from smartapp.launch.sessions import PendingLaunch, SessionStore
from smartapp.launch.smart_errors import SmartError, oauth_error_code
from smartapp.state import AppState, Jobs, Provenote


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


class LaunchController(Controller):
    @get("/launch")
    async def launch(
        self,
        provenote: Provenote,
        iss: FromQuery[str | None] = None,
        launch: FromQuery[str | None] = None,
    ) -> Response[Any]:
        settings = provenote.settings
        if not iss:
            return error_page("The launch did not say which EHR it came from (no iss parameter).")
        registration = settings.registration_for(iss)
        if registration is None:
            log.warning("launch refused: issuer %.200r is not registered", iss)
            # Nothing is fetched from an issuer that is not configured, and nothing it sent is
            # echoed back: /launch is neither a request-forgery tool nor an open redirect.
            return setup_problem("This app is not configured to be launched from that EHR.", 403)
        try:
            config = await discover(provenote.http, registration)
        except SmartError as error:
            return steps.refused(error)
        if (
            config.code_challenge_methods_supported
            and "S256" not in config.code_challenge_methods_supported
        ):
            return setup_problem("The EHR does not support PKCE S256, which this app requires.")
        binding = SessionStore.new_id()
        verifier, challenge = new_pkce()
        nonce = secrets.token_urlsafe(24)
        state_value = secrets.token_urlsafe(32)
        await provenote.store.add_pending(
            state_value,
            binding,
            PendingLaunch(
                iss=registration.issuer,
                config=config,
                verifier=verifier,
                nonce=nonce,
                launch=launch,
            ),
        )
        target = authorize_url(
            config,
            client_id=registration.client_id,
            redirect_uri=settings.redirect_uri_for(registration.issuer),
            scope=requested_scopes(config, registration, ehr_launch=bool(launch)),
            state=state_value,
            aud=iss,
            challenge=challenge,
            launch=launch,
            nonce=nonce,
        )
        bound = cookie(provenote.settings, provenote.launch_cookie, binding, 600)
        return Redirect(target, status_code=302, cookies=[bound])

    @get("/callback/{registration_id:str}")
    async def callback(
        self,
        provenote: Provenote,
        jobs: Jobs,
        request: Request[Any, Any, Any],
        registration_id: FromPath[str],
        code: FromQuery[str | None] = None,
        state_param: Annotated[str | None, QueryParameter(name="state")] = None,
        error: FromQuery[str | None] = None,
        error_description: FromQuery[str | None] = None,
        iss: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """The EHR's answer: checked, exchanged, a session opened, the stay's draft opened or
        started. Each step answers the page that ends the launch, or lets the next one run."""
        taken = await provenote.store.take_pending(
            state_param or "", request.cookies.get(provenote.launch_cookie)
        )
        if error:
            shown = oauth_error_code(error) or "refused"
            # error_description is the EHR's free text: its shape is logged, never its words.
            error_id = logged_answer(f"authorization refused ({shown})", error_description or "")
            return error_page(
                f"The EHR refused the authorization ({shown}; error {error_id}).", 403
            )
        if taken.cookie_missing:
            return steps.cookies_refused(taken.launch_url)
        pending = taken.pending
        if pending is None:
            return error_page(
                "The launch's state is unknown, expired or already used: start it again from "
                "the chart."
            )
        refused = steps.answer_refused(pending, registration_id, iss, code)
        if refused is not None:
            return refused
        assert code is not None
        try:
            context, stored = await steps.exchange(provenote.access, pending, code)
        except SmartError as failure:
            return steps.refused(failure)
        # A new session, whose id only the server chose: never the cookie the browser brought.
        session_id = SessionStore.new_id()
        await provenote.store.save(session_id, context, stored)
        named = await steps.with_user_name(provenote.access, session_id, context)
        if named is not context:
            await provenote.store.save(session_id, named, stored)
            context = named
        cookies = [
            cookie(provenote.settings, provenote.session_cookie, session_id),
            cookie(provenote.settings, provenote.launch_cookie, "", 0),
        ]
        answer = await steps.not_inpatient(provenote.access, session_id, context)
        if answer is None:
            answer = await open_or_draft(provenote, jobs, session_id, context)
        answer.cookies.extend(cookies)
        return answer

    @post("/logout", request_max_body_size=SMALL_FORM_BYTES)
    async def logout(self, provenote: Provenote, request: Request[Any, Any, Any]) -> Response[Any]:
        session_id = request.cookies.get(provenote.session_cookie)
        form = await request.form()
        if session_id and not csrf_valid(provenote.secret, session_id, form.get(FIELD)):
            return error_page("The form's security token is missing or wrong.", 403, "Refused")
        await provenote.store.end(session_id)
        page = error_page(
            "You are signed out of Provenote. Launch it again from the patient's chart.",
            200,
            heading="Signed out",
        )
        page.cookies.append(cookie(provenote.settings, provenote.session_cookie, "", 0))
        return page

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
