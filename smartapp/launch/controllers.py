"""The SMART App Launch (EHR and standalone), what a launch opens, and sign-out (the launch
context and the app's keys: ``context_controllers``).

``/launch`` accepts only a configured EHR (default deny), discovers it, and sends the browser to
authorize with PKCE, a nonce and a pending launch bound to this browser; ``/callback`` checks
the answer came from that EHR, exchanges the code, validates the id_token, opens a session
whose id only the server chose, and starts (or joins) the stay's drafting job.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Coroutine
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Response

from pipeline.errors import ProvenoteError
from smartapp.access.discovery import discover
from smartapp.access.oauth import authorize_url, new_pkce, requested_scopes
from smartapp.access.sessions import LaunchContext, PendingLaunch, SessionStore
from smartapp.access.smart_errors import SmartError, oauth_error_code
from smartapp.core.csrf import FIELD, csrf_valid
from smartapp.core.errors import LaunchError, log, logged, logged_answer
from smartapp.core.limits import SMALL_FORM_BYTES
from smartapp.core.metrics import DRAFT_AGE_AT_LAUNCH, DRAFT_AT_LAUNCH
from smartapp.core.responses import error_page, setup_problem
from smartapp.core.statuses import ACTIVE_JOB_STATES, DRAFTED_AHEAD, DraftStatus, JobState
from smartapp.core.tables import DraftRow, stored_utc, utcnow
from smartapp.ehr.fhir_client import FhirError
from smartapp.ehr.record_changes import record_changed_since
from smartapp.launch import callback as steps
from smartapp.launch.cookies import cookie
from smartapp.launch.roles import may_review
from smartapp.state import AppState, Jobs, Provenote


def _named_stay(context: LaunchContext) -> dict[str, str]:
    """What a CDS Hooks card's link named (its appContext): ``{"draft": id}`` or ``{"job": id}``;
    anything else names nothing."""
    try:
        named = json.loads(context.app_context or "{}")
    except ValueError:
        return {}
    if not isinstance(named, dict):
        return {}
    return {
        key: value
        for key, value in named.items()
        if key in {"draft", "job"} and isinstance(value, str)
    }


async def _card_context(provenote: AppState, jobs: Jobs, context: LaunchContext) -> LaunchContext:
    """The launch context, with the stay a card's link named when the EHR launched without an
    encounter: only a draft or job of this issuer's patient is taken (appContext is the EHR's
    word, but never lets a launch open another patient's draft)."""
    named = _named_stay(context)
    if context.encounter or not named:
        return context
    found = (
        await provenote.drafts.get(named["draft"])
        if "draft" in named
        else await jobs.get(named["job"])
    )
    if found is None or found.iss != context.iss or found.patient != context.patient:
        return context
    return context.model_copy(update={"encounter": found.encounter or None})


async def _write_held_draft(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext, draft: DraftRow
) -> None:
    """A draft made ahead (its job, done, never wrote) is written to the chart when a physician
    first opens it, with their grant; a failure leaves it unwritten, to be written at the next
    opening. Any other draft is its own job's to write."""
    job = await jobs.get(draft.job_id)
    if job is None or job.origin not in DRAFTED_AHEAD or job.state != JobState.DONE:
        return
    client = provenote.access.client_for(session_id, context.iss)
    try:
        await provenote.drafts.write_unwritten(
            client,
            draft,
            context.scope,
            provenote.installation,
            provenote.settings.writeback_strategies.get(draft.iss),
            context.fhir_user or "physician launch",
        )
    except (FhirError, LaunchError, ProvenoteError) as failure:
        logged("writing a draft made ahead at its opening", type(failure).__name__)


def _beside(provenote: AppState, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` beside the answer, kept until it ends."""
    task = asyncio.create_task(work)
    provenote.record_checks.add(task)
    task.add_done_callback(provenote.record_checks.discard)


async def _open_or_draft(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext
) -> Response[Any]:
    """A stay that has a draft opens it, with its review as left (relaunching drafts nothing
    again, and writes only a draft made ahead that was never written; "Draft again" on the
    draft asks for a new version); any other launch starts the stay's drafting job, or joins
    the one under way (one a CDS hook or pre-drafting started included)."""
    named = await _card_context(provenote, jobs, context)
    if named is not context:
        await provenote.store.update_context(session_id, named)
        context = named
    patient = context.patient
    if not patient:
        return Redirect("/", status_code=302)
    existing = await provenote.drafts.latest_for_stay(context.iss, patient, context.encounter)
    if existing is not None:
        if existing.status == DraftStatus.PRELIMINARY:
            DRAFT_AT_LAUNCH.labels("ready").inc()
            waited = (utcnow() - stored_utc(existing.created_at)).total_seconds()
            DRAFT_AGE_AT_LAUNCH.observe(max(0.0, waited))
            _beside(provenote, _compare_record(provenote, jobs, session_id, context, existing))
            if may_review(provenote.settings, context):
                _beside(
                    provenote, _write_held_draft(provenote, jobs, session_id, context, existing)
                )
        return Redirect(f"/drafts/{existing.id}", status_code=302)
    under_way = await jobs.latest_for(context.iss, patient, context.encounter)
    drafting = under_way is not None and under_way.state in ACTIVE_JOB_STATES
    DRAFT_AT_LAUNCH.labels("drafting" if drafting else "none").inc()
    await jobs.submit(
        context.iss,
        patient,
        context.encounter,
        session_id=session_id,
        may_write=may_review(provenote.settings, context),
    )
    return Redirect("/", status_code=302)


async def _compare_record(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext, draft: DraftRow
) -> None:
    """Ask the EHR, in one request and beside the opened draft, whether the patient's record
    changed since the draft's job began, and keep the answer on the draft (every process then
    says the same): the review offers "Draft again" first when it did. Never a second pull of
    the stay; an EHR that cannot say leaves the question open (the physician can always draft
    again). Beside, not before: an EHR slow to count (the sandbox's scans take seconds on a
    large record) must not hold the relaunch."""
    job = await jobs.get(draft.job_id)
    if job is None or not context.patient:
        return
    client = provenote.access.client_for(session_id, context.iss)
    since = stored_utc(job.created_at)
    try:
        changed = await record_changed_since(client, context.patient, since)
    except LaunchError as failure:
        logged("asking whether the record changed at a relaunch", type(failure).__name__)
        return
    if changed is not None:
        await provenote.drafts.note_record_changed(draft.id, changed)


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
        session_id, context = await steps.open_session(
            provenote.store, provenote.access, context, stored
        )
        cookies = [
            cookie(provenote.settings, provenote.session_cookie, session_id),
            cookie(provenote.settings, provenote.launch_cookie, "", 0),
        ]
        # A stay with a draft is inpatient already: a relaunch asks the EHR nothing more of it.
        drafted = await provenote.drafts.latest_for_stay(
            context.iss, context.patient or "", context.encounter
        )
        answer = (
            None if drafted else await steps.not_inpatient(provenote.access, session_id, context)
        )
        if answer is None:
            answer = await _open_or_draft(provenote, jobs, session_id, context)
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
