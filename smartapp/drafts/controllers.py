"""The physician's review: the draft by section with its flags first, actions, and sign-off.

Every page is rendered on the server from the stored summary; forms post back and work without
scripts (POST, then redirect), and ``static/review.js`` turns them into partial updates by asking
for the re-rendered review alone. Every route is guarded by a launch for the draft's patient on
its EHR (``smartapp.launch.guards``); every change carries the session's CSRF token and the
revision the user saw, and only a reviewer (``reviewer_roles``) may change or sign.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import Provide
from litestar.params import FromPath
from litestar.response import Redirect, Response
from litestar.types import Dependencies

from pipeline.rendering import render
from pipeline.review import ReviewError, review_items
from smartapp.core.csrf import FIELD, csrf_token, csrf_valid
from smartapp.core.db import DraftRow
from smartapp.core.responses import error_page, html
from smartapp.core.statuses import DraftStatus
from smartapp.drafts.pages import PARTIAL_HEADER, citations, patient_banner
from smartapp.drafts.review import ReviewRefusedError, Signer, reviewed
from smartapp.drafts.writing import WRITE_BACK_WORDS, Write
from smartapp.launch.guards import Visible, VisibleRecord, launched_for_draft, visible_draft
from smartapp.launch.roles import may_review, practitioner_reference
from smartapp.state import AppState, Provenote


@dataclass(frozen=True, slots=True)
class Submission:
    """A review form that passed the checks: what it says and the revision it saw."""

    form: dict[str, str]
    revision: int


async def _review_values(
    provenote: AppState, visible: VisibleRecord, draft: DraftRow, message: str | None = None
) -> dict[str, Any]:
    """What the review templates are rendered with."""
    context = visible.context
    opened = reviewed(draft)
    practitioner = practitioner_reference(context.fhir_user)
    return {
        "draft": draft,
        "summary": opened.summary,
        "open_flags": opened.open_flags,
        "citations": citations(opened.summary, opened.state),
        # A document about another patient first: the physician sees why it was left out.
        "documents": sorted(opened.state.documents, key=lambda d: not d.other_patient),
        "review_items": review_items,
        "edits": await provenote.drafts.edits(draft.id),
        "editable": draft.status == DraftStatus.PRELIMINARY,
        "practitioner": practitioner,
        "may_review": may_review(provenote.settings, context) and practitioner is not None,
        "write_back_words": WRITE_BACK_WORDS,
        "user": context.fhir_user,
        "csrf": csrf_token(provenote.secret, visible.session_id),
        "write_back": await provenote.drafts.write_back_of(draft.id),
        "message": message,
        "context": context,
        "patient": patient_banner(opened.state),
        "smart_style": await provenote.styles.get(context.smart_style_url),
    }


async def _answer(
    provenote: AppState,
    request: Request[Any, Any, Any],
    visible: VisibleRecord,
    message: str | None = None,
    status: int = 200,
) -> Response[Any]:
    """The review again: its fragment for the page's script, else a redirect or full page."""
    assert visible.draft is not None
    draft = await provenote.drafts.load(visible.draft.id) or visible.draft
    values = await _review_values(provenote, visible, draft, message)
    if request.headers.get(PARTIAL_HEADER) == "provenote-review":
        return html(render("app/_review.html.j2", **values), status)
    if message is None:
        return Redirect(f"/drafts/{draft.id}", status_code=303)
    return html(render("app/review.html.j2", **values), status)


async def _checked_form(
    provenote: AppState, request: Request[Any, Any, Any], visible: Visible
) -> Submission | Response[Any]:
    """The form, if its CSRF token is right, its user a reviewer and its revision given; else
    the refusal to answer with."""
    form = {key: str(value) for key, value in (await request.form()).items()}
    if not csrf_valid(provenote.secret, visible.session_id, form.get(FIELD)):
        return error_page(
            "The form's security token is missing or wrong; reload the page and try again.",
            403,
            heading="Request refused",
        )
    if not may_review(provenote.settings, visible.context):
        roles = " or ".join(provenote.settings.reviewer_roles).lower()
        user = visible.context.fhir_user or "an unknown user"
        return await _answer(
            provenote,
            request,
            visible,
            f"Only a {roles} can review and sign drafts; you are signed in as {user}.",
            403,
        )
    if not form.get("revision", "").isdigit():
        return error_page("The form did not say which revision it saw.", 400)
    return Submission(form, int(form["revision"]))


class DraftController(Controller):
    guards = (launched_for_draft,)
    # Litestar's own (mutable) attribute, as Litestar declares it.
    dependencies: Dependencies | None = {  # noqa: RUF012
        "visible": Provide(visible_draft, sync_to_thread=False)
    }

    @get("/drafts/{draft_id:str}")
    async def draft_page(
        self, provenote: Provenote, visible: VisibleRecord, draft_id: FromPath[str]
    ) -> Response[str]:
        draft = visible.draft
        assert draft is not None
        actor = visible.context.fhir_user or "unknown user"
        await provenote.drafts.audit(actor, "draft_viewed", draft.id, "")
        try:
            values = await _review_values(provenote, visible, draft)
        except ReviewRefusedError as refused:
            return error_page(str(refused), 409, "Draft cannot be reviewed")
        return html(render("app/review.html.j2", **values))

    @post("/drafts/{draft_id:str}/sentences/{sentence_id:str}")
    async def sentence_action(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
        sentence_id: FromPath[str],
    ) -> Response[Any]:
        submitted = await _checked_form(provenote, request, visible)
        if isinstance(submitted, Response):
            return submitted
        action = submitted.form.get("action")
        if action not in {"accept", "edit", "delete"}:
            return error_page("Unknown review action.", 400)
        try:
            await provenote.drafts.apply_review(
                draft_id,
                submitted.revision,
                action,  # type: ignore[arg-type]
                sentence_id,
                visible.context.fhir_user or "unknown user",
                submitted.form.get("text", ""),
            )
        except ReviewRefusedError as failure:
            return await _answer(provenote, request, visible, str(failure), failure.status_code)
        except ReviewError as failure:
            return await _answer(provenote, request, visible, str(failure), 400)
        return await _answer(provenote, request, visible)

    @post("/drafts/{draft_id:str}/sign")
    async def sign_draft(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
    ) -> Response[Any]:
        submitted = await _checked_form(provenote, request, visible)
        if isinstance(submitted, Response):
            return submitted
        context = visible.context
        practitioner = practitioner_reference(context.fhir_user)
        if practitioner is None:
            user = context.fhir_user or "an unknown user"
            message = f"Only a practitioner can sign; you are signed in as {user}."
            return await _answer(provenote, request, visible, message, 403)
        client = provenote.access.client_for(visible.session_id, context.iss)
        forced = provenote.settings.writeback_strategies.get(context.iss)
        try:
            await provenote.drafts.sign(
                client,
                draft_id,
                submitted.revision,
                Signer(practitioner, visible.session_id, context.scope),
                Write(provenote.installation, forced),
            )
        except ReviewRefusedError as failure:
            return await _answer(provenote, request, visible, str(failure), failure.status_code)
        return await _answer(provenote, request, visible)

    @get("/api/drafts/{draft_id:str}")
    async def draft_api(
        self, provenote: Provenote, visible: VisibleRecord, draft_id: FromPath[str]
    ) -> dict[str, Any]:
        draft = visible.draft
        assert draft is not None
        written = await provenote.drafts.write_back_of(draft.id)
        return {
            "id": draft.id,
            "version": draft.version,
            "status": draft.status,
            "patient": draft.patient,
            "encounter": draft.encounter,
            "bundle": draft.bundle,
            "markdown": draft.markdown,
            "write_back": None
            if written is None
            else {
                "strategy": written.strategy,
                "status": written.status,
                "remote": f"{written.remote_type}/{written.remote_id}"
                if written.remote_id
                else None,
            },
        }
