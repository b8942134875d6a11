"""The physician's review page: the draft by section, its flags first, actions and sign-off.

Every page is rendered on the server from the stored summary; forms post back and work without
scripts (POST, then redirect), and ``static/review.js`` turns them into partial updates by asking
for the re-rendered review alone. A user sees only drafts of the patient in their launch context,
and every change carries the session's CSRF token and the revision the user saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request, get, post
from litestar.params import FromPath
from litestar.response import Redirect, Response
from sqlalchemy import select

from pipeline.evidence import EvidenceState, PatientInfoAttributes, SourceDocument, SourceRef
from pipeline.rendering import render
from pipeline.review import ReviewError, review_items
from pipeline.summary import Summary, cited_sources
from smartapp.core.csrf import FIELD, csrf_token, csrf_valid
from smartapp.core.db import AuditRow, DraftRow, WriteBackRow
from smartapp.core.settings import AppSettings
from smartapp.core.statuses import DraftStatus
from smartapp.drafts.review import (
    ReviewRefusedError,
    Signer,
    apply_review,
    edits_of,
    load,
    reviewed,
    sign,
)
from smartapp.ehr.writeback import WRITE_BACK_WORDS, Write
from smartapp.launch.sessions import LaunchContext
from smartapp.state import AppState

PARTIAL_HEADER = "x-requested-with"


def html(page: str, status: int = 200) -> Response[str]:
    """An HTML answer; its security headers (CSP, no-store) come from ``smartapp.core.headers``."""
    return Response(page, status_code=status, media_type="text/html")


def error_page(message: str, status: int = 400, heading: str | None = None) -> Response[str]:
    """An error page; without a heading it is the launch's (no token exchanged, nothing kept)."""
    advice = "Nothing was changed." if heading else None
    return html(
        render("app/error.html.j2", message=message, heading=heading, advice=advice), status
    )


Visible = tuple[str, LaunchContext, DraftRow]


@dataclass(frozen=True, slots=True)
class Submission:
    """A review form that passed the checks: whose, which draft, what it says, what it saw."""

    found: Visible
    form: dict[str, str]
    revision: int


def _user_reference(fhir_user: str | None) -> tuple[str, str] | None:
    """(resource type, id) of the user; fhirUser may be an absolute URL."""
    parts = (fhir_user or "").rstrip("/").split("/")
    return (parts[-2], parts[-1]) if len(parts) >= 2 and parts[-2] and parts[-1] else None


def practitioner_reference(fhir_user: str | None) -> str | None:
    """``Practitioner/{id}`` when the user is a Practitioner."""
    found = _user_reference(fhir_user)
    return f"Practitioner/{found[1]}" if found and found[0] == "Practitioner" else None


def may_review(settings: AppSettings, context: LaunchContext) -> bool:
    """Whether the launched user may change and sign drafts, and so write to the chart."""
    found = _user_reference(context.fhir_user)
    return found is not None and found[0] in settings.reviewer_roles


def _citations(summary: Summary, state: EvidenceState) -> dict[str, list[dict[str, Any]]]:
    """Per sentence id, what each citation opens to: the quote with its document, page and
    date, or the resource and element."""
    documents = {document.id: document for document in state.documents}
    return {
        sentence.id: [
            _citation(ref, documents.get(ref.document or ""))
            for ref in cited_sources(sentence, state)
        ]
        for sentence in summary.sentences()
    }


def _citation(ref: SourceRef, document: SourceDocument | None) -> dict[str, Any]:
    return {
        "resource": ref.resource,
        "path": ref.path,
        "quote": ref.quote,
        "page": ref.page,
        "start": ref.start,
        "end": ref.end,
        "title": document.title if document else None,
        "date": document.date.date().isoformat() if document and document.date else None,
    }


def _patient(state: EvidenceState) -> PatientInfoAttributes | None:
    for fact in state.facts.get("patient_info", []):
        if isinstance(fact.attributes, PatientInfoAttributes):
            return fact.attributes
    return None


def review_handlers(state: AppState) -> list[Any]:
    database = state.database

    async def visible(request: Request, draft_id: str) -> Visible | None:
        """The draft, if the requesting session's launch is about its patient on its EHR."""
        session_id = request.cookies.get(state.session_cookie)
        context = await state.store.context(session_id)
        draft = await load(database, draft_id)
        if session_id is None or context is None or draft is None:
            return None
        if context.patient != draft.patient or context.iss != draft.iss:
            return None
        return session_id, context, draft

    async def write_back_of(draft_id: str) -> WriteBackRow | None:
        async with database.sessions() as session:
            return (
                await session.execute(select(WriteBackRow).where(WriteBackRow.draft_id == draft_id))
            ).scalar_one_or_none()

    async def review_page(
        session_id: str, context: LaunchContext, draft: DraftRow, message: str | None = None
    ) -> dict[str, Any]:
        """What the review templates are rendered with."""
        opened = reviewed(draft)
        written = await write_back_of(draft.id)
        return {
            "draft": draft,
            "summary": opened.summary,
            "open_flags": opened.open_flags,
            "citations": _citations(opened.summary, opened.state),
            "review_items": review_items,
            "edits": await edits_of(database, draft.id),
            "editable": draft.status == DraftStatus.PRELIMINARY,
            "practitioner": practitioner_reference(context.fhir_user),
            "may_review": may_review(state.settings, context)
            and practitioner_reference(context.fhir_user) is not None,
            "write_back_words": WRITE_BACK_WORDS,
            "user": context.fhir_user,
            "csrf": csrf_token(state.secret, session_id),
            "write_back": written,
            "message": message,
            "context": context,
            "patient": _patient(opened.state),
            "smart_style": await state.styles.get(context.smart_style_url),
        }

    async def answer(
        request: Request,
        found: Visible,
        message: str | None = None,
        status: int = 200,
    ) -> Response[Any]:
        """The review again: its fragment for the page's script, else a redirect or full page."""
        session_id, context, draft = found
        fresh = await load(database, draft.id) or draft
        values = await review_page(session_id, context, fresh, message)
        if request.headers.get(PARTIAL_HEADER) == "provenote-review":
            return html(render("app/_review.html.j2", **values), status)
        if message is None:
            return Redirect(f"/drafts/{draft.id}", status_code=303)
        return html(render("app/review.html.j2", **values), status)

    async def checked_form(request: Request, draft_id: str) -> Submission | Response[Any]:
        """The form, if its draft is visible to the session, its CSRF token right and its
        revision given; else the refusal to answer with."""
        found = await visible(request, draft_id)
        if found is None:
            return error_page("No such draft in this launch context.", 404)
        form = {key: str(value) for key, value in (await request.form()).items()}
        if not csrf_valid(state.secret, found[0], form.get(FIELD)):
            return error_page(
                "The form's security token is missing or wrong; reload the page and try again.",
                403,
                heading="Request refused",
            )
        if not may_review(state.settings, found[1]):
            return await answer(
                request,
                found,
                f"Only a {' or '.join(state.settings.reviewer_roles).lower()} can review and "
                f"sign drafts; you are signed in as {found[1].fhir_user or 'an unknown user'}.",
                403,
            )
        if not form.get("revision", "").isdigit():
            return error_page("The form did not say which revision it saw.", 400)
        return Submission(found, form, int(form["revision"]))

    @get("/drafts/{draft_id:str}")
    async def draft_page(request: Request, draft_id: FromPath[str]) -> Response[str]:
        found = await visible(request, draft_id)
        if found is None:
            return error_page("No such draft in this launch context.", 404, "Draft not found")
        session_id, context, draft = found
        async with database.sessions() as session, session.begin():
            actor = context.fhir_user or "unknown user"
            session.add(AuditRow(actor=actor, action="draft_viewed", draft_id=draft.id, detail=""))
        try:
            values = await review_page(session_id, context, draft)
        except ReviewRefusedError as refused:
            return error_page(str(refused), 409, "Draft cannot be reviewed")
        return html(render("app/review.html.j2", **values))

    @post("/drafts/{draft_id:str}/sentences/{sentence_id:str}")
    async def sentence_action(
        request: Request, draft_id: FromPath[str], sentence_id: FromPath[str]
    ) -> Response[Any]:
        submitted = await checked_form(request, draft_id)
        if isinstance(submitted, Response):
            return submitted
        found, form = submitted.found, submitted.form
        action = form.get("action")
        if action not in {"accept", "edit", "delete"}:
            return error_page("Unknown review action.", 400)
        actor = found[1].fhir_user or "unknown user"
        try:
            await apply_review(
                database,
                draft_id,
                submitted.revision,
                action,  # type: ignore[arg-type]
                sentence_id,
                actor,
                form.get("text", ""),
            )
        except ReviewRefusedError as failure:
            return await answer(request, found, str(failure), failure.status_code)
        except ReviewError as failure:
            return await answer(request, found, str(failure), 400)
        return await answer(request, found)

    @post("/drafts/{draft_id:str}/sign")
    async def sign_draft(request: Request, draft_id: FromPath[str]) -> Response[Any]:
        submitted = await checked_form(request, draft_id)
        if isinstance(submitted, Response):
            return submitted
        found = submitted.found
        session_id, context, _ = found
        practitioner = practitioner_reference(context.fhir_user)
        if practitioner is None:
            return await answer(
                request,
                found,
                f"Only a practitioner can sign; you are signed in as "
                f"{context.fhir_user or 'an unknown user'}.",
                403,
            )
        client = state.access.client_for(session_id, context.iss)
        try:
            await sign(
                database,
                client,
                draft_id,
                submitted.revision,
                Signer(practitioner, session_id, context.scope),
                Write(state.installation, state.settings.writeback_strategies.get(context.iss)),
            )
        except ReviewRefusedError as failure:
            return await answer(request, found, str(failure), failure.status_code)
        return await answer(request, found)

    @get("/api/drafts/{draft_id:str}")
    async def draft_api(request: Request, draft_id: FromPath[str]) -> Response[Any]:
        found = await visible(request, draft_id)
        if found is None:
            return Response({"error": "no such draft in this launch context"}, status_code=404)
        draft = found[2]
        written = await write_back_of(draft.id)
        return Response(
            {
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
        )

    return [draft_page, draft_api, sentence_action, sign_draft]
