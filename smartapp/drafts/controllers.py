"""The physician's review: the draft by section with its flags first, actions, and sign-off.

Every page is rendered on the server from the stored summary; forms post back and work without
scripts (POST, then redirect), and ``static/review.js`` turns them into partial updates by asking
for the re-rendered review alone. Every route is guarded by a launch for the draft's patient on
its EHR (``smartapp.launch.guards``); every change carries the session's CSRF token and the
revision the user saw, and only a reviewer (``reviewer_roles``) may change or sign.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath
from litestar.response import Redirect, Response
from litestar.types import Dependencies

from pipeline.checking.review import (
    ReviewError,
    find_sentence,
    preview_edit,
    review_items,
    word_diff,
)
from pipeline.text.rendering import render
from smartapp.core.limits import EDIT_FORM_BYTES, SMALL_FORM_BYTES
from smartapp.core.responses import error_page, html
from smartapp.core.statuses import DraftStatus
from smartapp.drafts.pages import (
    PARTIAL_HEADER,
    SIGN_PREVIEW,
    ReviewPages,
)
from smartapp.drafts.review import (
    EhrCopyChangedError,
    ReviewRefusedError,
    SentenceReview,
    reviewed,
)
from smartapp.drafts.signing import Signer, signed_note
from smartapp.drafts.writing import Write
from smartapp.launch.guards import SeenDraft, launched_for_draft, visible_draft
from smartapp.launch.roles import may_review
from smartapp.state import AppSettings, Drafts, Jobs, Provenote


def review_pages(provenote: Provenote) -> ReviewPages:
    return ReviewPages(
        provenote.drafts,
        provenote.settings,
        provenote.secret,
        provenote.styles,
    )


def _write(provenote: Provenote, iss: str) -> Write:
    """Where and how a signature is written: this installation, the EHR's forced strategy."""
    return Write(provenote.installation, provenote.settings.writeback_strategies.get(iss))


# What a review handler declares to be handed the review's pages (``review_pages``).
Pages = NamedDependency[ReviewPages]


class DraftController(Controller):
    guards = (launched_for_draft,)
    # Litestar's own (mutable) attribute, as Litestar declares it.
    dependencies: Dependencies | None = {  # noqa: RUF012
        "visible": Provide(visible_draft, sync_to_thread=False),
        "pages": Provide(review_pages, sync_to_thread=False),
    }

    @get("/drafts/{draft_id:str}")
    async def draft_page(
        self, drafts: Drafts, pages: Pages, visible: SeenDraft, draft_id: FromPath[str]
    ) -> Response[str]:
        await drafts.audit(visible.actor, "draft_viewed", visible.draft.id, "")
        try:
            values = await pages.values(visible, visible.draft)
        except ReviewRefusedError as refused:
            return error_page(str(refused), 409, "Draft cannot be reviewed")
        return html(render("app/review.html.j2", **values))

    @post(
        "/drafts/{draft_id:str}/sentences/{sentence_id:str}",
        request_max_body_size=EDIT_FORM_BYTES,
    )
    async def sentence_action(
        self,
        drafts: Drafts,
        pages: Pages,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
        sentence_id: FromPath[str],
    ) -> Response[Any]:
        submitted = await pages.checked_form(request, visible)
        if isinstance(submitted, Response):
            return submitted
        action = submitted.form.get("action")
        if action not in {"accept", "edit", "delete"}:
            return error_page("Unknown review action.", 400)
        asked = SentenceReview(
            draft_id,
            submitted.revision,
            action,  # type: ignore[arg-type]
            sentence_id,
            visible.actor,
            submitted.form.get("text", ""),
        )
        try:
            changed, _ = await drafts.apply_review(asked)
        except ReviewRefusedError as failure:
            message, status = str(failure), failure.status_code
            return await pages.answer(request, visible, message, status, sentence_id)
        except ReviewError as failure:
            return await pages.answer(request, visible, str(failure), 400, sentence_id)
        return await pages.answer(request, visible, acted=sentence_id, draft=changed)

    @post("/drafts/{draft_id:str}/sign", request_max_body_size=SMALL_FORM_BYTES)
    async def sign_draft(
        self,
        provenote: Provenote,
        pages: Pages,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
    ) -> Response[Any]:
        signing = await pages.signing_form(request, visible)
        if isinstance(signing, Response):
            return signing
        submitted, practitioner = signing
        context = visible.context
        try:
            await provenote.drafts.sign(
                provenote.access.client_for(visible.session_id, context.iss),
                draft_id,
                submitted.revision,
                Signer(practitioner, visible.session_id, context.scope, context.user_name),
                _write(provenote, context.iss),
            )
        except EhrCopyChangedError as changed:
            message, status = str(changed), changed.status_code
            return await pages.answer(request, visible, message, status, ehr_copy=True)
        except ReviewRefusedError as failure:
            return await pages.answer(request, visible, str(failure), failure.status_code)
        return await pages.answer(request, visible)

    @post("/drafts/{draft_id:str}/redraft", request_max_body_size=SMALL_FORM_BYTES)
    async def draft_again(
        self,
        settings: AppSettings,
        drafts: Drafts,
        jobs: Jobs,
        pages: Pages,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
    ) -> Response[Any]:
        """Draft again: a new version of the stay's draft from the record as it is now, which
        replaces this one (here and in the EHR's copy) once it is ready. Never after a
        signature: nothing replaces a signed summary."""
        submitted = await pages.checked_form(request, visible)
        if isinstance(submitted, Response):
            return submitted
        draft, context = visible.draft, visible.context
        if draft.status != DraftStatus.PRELIMINARY:
            message = f"This draft is {draft.status}: it is not drafted again."
            return await pages.answer(request, visible, message, 409)
        await jobs.submit(
            draft.iss,
            draft.patient,
            draft.encounter or None,
            session_id=visible.session_id,
            may_write=may_review(settings, context),
        )
        await drafts.audit(visible.actor, "redraft_asked", draft.id, "")
        return Redirect("/", status_code=303)

    @post(
        "/drafts/{draft_id:str}/sentences/{sentence_id:str}/check",
        request_max_body_size=EDIT_FORM_BYTES,
    )
    async def check_edit(
        self,
        pages: Pages,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
        sentence_id: FromPath[str],
    ) -> Response[Any]:
        """The checker's verdict on an edit being typed, and its changes; nothing is stored (the
        draft is ``visible``'s, read from the path by the guard)."""
        submitted = await pages.checked_form(request, visible)
        if isinstance(submitted, Response):
            return submitted
        opened = reviewed(visible.draft)
        text = submitted.form.get("text", "")
        try:
            before = find_sentence(opened.summary, sentence_id)
            checked = await asyncio.to_thread(
                preview_edit, opened.summary, sentence_id, text, opened.state
            )
        except ReviewError as refused:
            return Response({"error": str(refused)}, status_code=400)
        return Response(
            status_code=200,
            content={
                "verdict": checked.verdict,
                "flagged": checked.flagged,
                "reasons": [item.model_dump() for item in review_items(checked)],
                "diff": [part.model_dump() for part in word_diff(before.text, checked.text)],
            },
        )

    @post("/drafts/{draft_id:str}/sign/preview", request_max_body_size=SMALL_FORM_BYTES)
    async def sign_preview(
        self,
        provenote: Provenote,
        pages: Pages,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
    ) -> Response[Any]:
        """What signing will write, to confirm: status, attester and the note as sent (the
        draft is ``visible``'s, read from the path by the guard)."""
        signing = await pages.signing_form(request, visible)
        if isinstance(signing, Response):
            return signing
        submitted, practitioner = signing
        draft, context = visible.draft, visible.context
        if draft.status != DraftStatus.PRELIMINARY or draft.revision != submitted.revision:
            message = "The draft changed since you opened it; here it is as it stands now."
            return await pages.answer(request, visible, message, 409)
        values = await pages.values(visible, draft)
        values["signed_note"] = signed_note(
            reviewed(draft), practitioner, datetime.now(UTC), context.user_name
        )
        client = provenote.access.client_for(visible.session_id, context.iss)
        values["sign_outcome"] = await provenote.drafts.sign_outcome(
            client, draft, context.scope, _write(provenote, context.iss)
        )
        if request.headers.get(PARTIAL_HEADER) == SIGN_PREVIEW:
            return html(render("app/_sign_preview.html.j2", **values))
        return html(render("app/sign.html.j2", **values))
