"""The physician's review: the draft by section with its flags first, actions, and sign-off.

Every page is rendered on the server from the stored summary; forms post back and work without
scripts (POST, then redirect), and ``static/review.js`` turns them into partial updates by asking
for the re-rendered review alone. Every route is guarded by a launch for the draft's patient on
its EHR (``smartapp.launch.guards``); every change carries the session's CSRF token and the
revision the user saw, and only a reviewer (``reviewer_roles``) may change or sign.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get, post
from litestar.di import Provide
from litestar.params import FromPath
from litestar.response import Redirect, Response
from litestar.types import Dependencies

from fhir_mapping.document_reference import ehr_note_text
from fhir_mapping.documents import attachment_in_record
from pipeline.checking.review import (
    ReviewError,
    find_sentence,
    preview_edit,
    review_items,
    word_diff,
)
from pipeline.evidence.model import SourceDocument
from pipeline.evidence.summary import Sentence
from pipeline.ingestion.pdf import text_span_boxes
from pipeline.text.rendering import render
from smartapp.core.csrf import FIELD, csrf_token, csrf_valid
from smartapp.core.db import DraftEditRow, DraftRow
from smartapp.core.limits import EDIT_FORM_BYTES, SMALL_FORM_BYTES
from smartapp.core.responses import error_page, html
from smartapp.core.statuses import DraftStatus
from smartapp.drafts.pages import (
    PARTIAL_HEADER,
    REVIEW_UPDATE,
    SENTENCE_UPDATE,
    SIGN_PREVIEW,
    SOURCE_FRAGMENT,
    patient_banner,
    workspace_values,
)
from smartapp.drafts.review import (
    EhrCopyChangedError,
    ReviewRefusedError,
    Signer,
    reviewed,
    signed_note,
)
from smartapp.drafts.sources import sentence_citations, source_view
from smartapp.drafts.writing import WRITE_BACK_WORDS, Write
from smartapp.launch.guards import Visible, VisibleRecord, launched_for_draft, visible_draft
from smartapp.launch.roles import may_review, practitioner_reference
from smartapp.state import AppState, Provenote


@dataclass(frozen=True, slots=True)
class Submission:
    """A review form that passed the checks: what it says and the revision it saw."""

    form: dict[str, str]
    revision: int


def _drafted(edits: list[DraftEditRow]) -> dict[str, Sentence]:
    """Each reviewed sentence as drafted: the record its first edit kept."""
    first: dict[str, Sentence] = {}
    for row in edits:
        if row.drafted and row.sentence_id not in first:
            first[row.sentence_id] = Sentence.model_validate(row.drafted)
    return first


async def _review_values(
    provenote: AppState, visible: VisibleRecord, draft: DraftRow, message: str | None = None
) -> dict[str, Any]:
    """What the review templates are rendered with."""
    context = visible.context
    opened = reviewed(draft)
    practitioner = practitioner_reference(context.fhir_user)
    edits = await provenote.drafts.edits(draft.id)
    return {
        "draft": draft,
        **workspace_values(opened.summary, opened.state, _drafted(edits)),
        # A document about another patient first: the physician sees why it was left out.
        "documents": sorted(opened.state.documents, key=lambda d: not d.other_patient),
        "edits": edits,
        "editable": draft.status == DraftStatus.PRELIMINARY,
        "practitioner": practitioner,
        "may_review": may_review(provenote.settings, context) and practitioner is not None,
        "write_back_words": WRITE_BACK_WORDS,
        "user": context.fhir_user,
        "csrf": csrf_token(provenote.secret, visible.session_id),
        "write_back": await provenote.drafts.write_back_of(draft.id),
        "message": message,
        "ehr_copy_url": None,
        "record_changed": provenote.record_changed.get(draft.id, False),
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
    acted: str | None = None,
    draft: DraftRow | None = None,
    ehr_copy: bool = False,
) -> Response[Any]:
    """The review again, as the asker wants it: the changed sentence with the counts that
    moved (the workspace's script), the whole review (older scripts), else a redirect or page.
    ``draft`` is the draft as an action just left it, else it is loaded."""
    assert visible.draft is not None
    if draft is None:
        draft = await provenote.drafts.load(visible.draft.id) or visible.draft
    values = await _review_values(provenote, visible, draft, message)
    if ehr_copy:
        values["ehr_copy_url"] = f"/drafts/{draft.id}/ehr-copy"
    asked = request.headers.get(PARTIAL_HEADER)
    if asked == SENTENCE_UPDATE and acted is not None:
        sentence = next((s for s in values["summary"].sentences() if s.id == acted), None)
        page = render("app/_update.html.j2", **values, acted=acted, sentence=sentence)
        return html(page, status)
    if asked in {REVIEW_UPDATE, SIGN_PREVIEW}:
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

    @post(
        "/drafts/{draft_id:str}/sentences/{sentence_id:str}",
        request_max_body_size=EDIT_FORM_BYTES,
    )
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
            changed, _ = await provenote.drafts.apply_review(
                draft_id,
                submitted.revision,
                action,  # type: ignore[arg-type]
                sentence_id,
                visible.context.fhir_user or "unknown user",
                submitted.form.get("text", ""),
            )
        except ReviewRefusedError as failure:
            message, status = str(failure), failure.status_code
            return await _answer(provenote, request, visible, message, status, sentence_id)
        except ReviewError as failure:
            return await _answer(provenote, request, visible, str(failure), 400, sentence_id)
        return await _answer(provenote, request, visible, acted=sentence_id, draft=changed)

    @post("/drafts/{draft_id:str}/sign", request_max_body_size=SMALL_FORM_BYTES)
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
                Signer(practitioner, visible.session_id, context.scope, context.user_name),
                Write(provenote.installation, forced),
            )
        except EhrCopyChangedError as changed:
            return await _answer(
                provenote, request, visible, str(changed), changed.status_code, ehr_copy=True
            )
        except ReviewRefusedError as failure:
            return await _answer(provenote, request, visible, str(failure), failure.status_code)
        return await _answer(provenote, request, visible)

    @post("/drafts/{draft_id:str}/redraft", request_max_body_size=SMALL_FORM_BYTES)
    async def draft_again(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
    ) -> Response[Any]:
        """Draft again: a new version of the stay's draft from the record as it is now, which
        replaces this one (here and in the EHR's copy) once it is ready. Never after a
        signature: nothing replaces a signed summary."""
        submitted = await _checked_form(provenote, request, visible)
        if isinstance(submitted, Response):
            return submitted
        draft = visible.draft
        assert draft is not None and provenote.jobs is not None
        if draft.status != DraftStatus.PRELIMINARY:
            message = f"This draft is {draft.status}: it is not drafted again."
            return await _answer(provenote, request, visible, message, 409)
        context = visible.context
        await provenote.jobs.submit(
            draft.iss,
            draft.patient,
            draft.encounter or None,
            session_id=visible.session_id,
            may_write=may_review(provenote.settings, context),
        )
        await provenote.drafts.audit(
            context.fhir_user or "unknown user", "redraft_asked", draft.id, ""
        )
        return Redirect("/", status_code=303)

    @get("/drafts/{draft_id:str}/ehr-copy")
    async def ehr_copy(self, provenote: Provenote, visible: VisibleRecord) -> Response[str]:
        """The EHR's copy of the note as it is there now, beside the draft (after a 412)."""
        draft = visible.draft
        assert draft is not None
        written = await provenote.drafts.write_back_of(draft.id)
        if written is None or not written.remote_type or not written.remote_id:
            return error_page("The EHR holds no copy of this draft.", 404, heading="No copy")
        client = provenote.access.client_for(visible.session_id, visible.context.iss)
        copy = await client.read(written.remote_type, written.remote_id)
        values = {
            "draft": draft,
            "copy_text": ehr_note_text(copy),
            "copy_reference": f"{written.remote_type}/{written.remote_id}",
            "copy_version": (copy.get("meta") or {}).get("versionId"),
            "context": visible.context,
            "patient": patient_banner(reviewed(draft).state),
        }
        return html(render("app/ehr_copy.html.j2", **values))

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

    @get("/drafts/{draft_id:str}/sentences/{sentence_id:str}/sources/{number:int}")
    async def source(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
        sentence_id: FromPath[str],
        number: FromPath[int],
    ) -> Response[str]:
        """One citation opened: the page with the quote marked, or the resource's fields."""
        draft = visible.draft
        assert draft is not None
        opened = reviewed(draft)
        sentence = next((s for s in opened.summary.sentences() if s.id == sentence_id), None)
        cited = sentence_citations(sentence, opened.state) if sentence is not None else []
        if sentence is None or not 1 <= number <= len(cited):
            return error_page("The draft has no such source.", 404, heading="No such source")
        view = source_view(cited[number - 1], opened.state, draft.id)
        ref, page = view.citation.ref, view.page
        if view.document and view.image_url and page and not page.ocr_applied:
            attachment = await _attachment(provenote, draft, view.document)
            if attachment is not None and ref.start is not None and ref.end is not None:
                boxes = await asyncio.to_thread(
                    text_span_boxes, attachment[0], page.number, ref.start, ref.end
                )
                view.boxes = boxes
        values = {"view": view, "sentence": sentence, "draft": draft}
        if request.headers.get(PARTIAL_HEADER) == SOURCE_FRAGMENT:
            return html(render("app/_source.html.j2", **values))
        context = visible.context
        banner = {"context": context, "patient": patient_banner(opened.state)}
        return html(render("app/source.html.j2", **values, **banner))

    @get("/drafts/{draft_id:str}/documents/{document_id:str}/pages/{number:int}")
    async def document_page(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        draft_id: FromPath[str],
        document_id: FromPath[str],
        number: FromPath[int],
    ) -> Response[Any]:
        """A page of a PDF or a scanned note, as the image the source pane marks: for reviewers
        only (the costliest request there is), rendered within a pixel bound, a few at a time."""
        draft = visible.draft
        assert draft is not None
        if not may_review(provenote.settings, visible.context):
            return error_page("Page images are for reviewers.", 403, heading="Refused")
        state = reviewed(draft).state
        document = next((d for d in state.documents if d.id == document_id), None)
        attachment = await _attachment(provenote, draft, document) if document else None
        image = None
        if attachment is not None:
            key = (draft.id, document_id, number)
            image = await provenote.page_images.get(key, attachment[0], attachment[1], number)
        if image is None:
            return error_page("The draft has no such page.", 404, heading="No such page")
        return Response(image, media_type="image/png")

    @post(
        "/drafts/{draft_id:str}/sentences/{sentence_id:str}/check",
        request_max_body_size=EDIT_FORM_BYTES,
    )
    async def check_edit(
        self,
        provenote: Provenote,
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
        sentence_id: FromPath[str],
    ) -> Response[Any]:
        """The checker's verdict on an edit being typed, and its changes; nothing is stored."""
        submitted = await _checked_form(provenote, request, visible)
        if isinstance(submitted, Response):
            return submitted
        draft = visible.draft
        assert draft is not None
        opened = reviewed(draft)
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
        visible: VisibleRecord,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
    ) -> Response[Any]:
        """What signing will write, to confirm: status, attester and the note as sent."""
        submitted = await _checked_form(provenote, request, visible)
        if isinstance(submitted, Response):
            return submitted
        draft = visible.draft
        assert draft is not None
        practitioner = practitioner_reference(visible.context.fhir_user)
        if draft.status != DraftStatus.PRELIMINARY or draft.revision != submitted.revision:
            message = "The draft changed since you opened it; here it is as it stands now."
            return await _answer(provenote, request, visible, message, 409)
        if practitioner is None:
            user = visible.context.fhir_user or "an unknown user"
            message = f"Only a practitioner can sign; you are signed in as {user}."
            return await _answer(provenote, request, visible, message, 403)
        values = await _review_values(provenote, visible, draft)
        values["signed_note"] = signed_note(
            reviewed(draft), practitioner, datetime.now(UTC), visible.context.user_name
        )
        context = visible.context
        client = provenote.access.client_for(visible.session_id, context.iss)
        forced = provenote.settings.writeback_strategies.get(context.iss)
        write = Write(provenote.installation, forced)
        values["sign_outcome"] = await provenote.drafts.sign_outcome(
            client, draft, context.scope, write
        )
        if request.headers.get(PARTIAL_HEADER) == SIGN_PREVIEW:
            return html(render("app/_sign_preview.html.j2", **values))
        return html(render("app/sign.html.j2", **values))


async def _attachment(
    provenote: AppState, draft: DraftRow, document: SourceDocument
) -> tuple[bytes, str | None] | None:
    """A document's bytes, from the record its draft was made from (kept with the job)."""
    job = await provenote.jobs.get(draft.job_id) if provenote.jobs is not None else None
    if job is None or job.record is None:
        return None
    for source in document.sources:
        found = attachment_in_record(job.record, source.resource, source.path)
        if found is not None:
            return found
    return None
