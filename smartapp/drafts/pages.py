"""The review's pages: what they show beside the sentences (the flags and their progress, each
citation's label, the draft's sections, the patient banner), how a review form is checked, and
how an action is answered (the changed sentence, the whole review, or a redirect)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.response import Redirect, Response

from pipeline.checking.review import review_items, review_progress
from pipeline.evidence.model import EvidenceState, PatientInfoAttributes
from pipeline.evidence.summary import Sentence, Summary
from pipeline.text.rendering import render
from smartapp.core.csrf import csrf_checked_form, csrf_token
from smartapp.core.responses import error_page, html
from smartapp.core.settings import Settings
from smartapp.core.statuses import DraftStatus
from smartapp.core.tables import DraftEditRow, DraftRow, WriteBackRow
from smartapp.drafts.review import reviewed
from smartapp.drafts.service import DraftService
from smartapp.drafts.sources import citations
from smartapp.drafts.writing import WRITE_BACK_WORDS
from smartapp.launch.guards import VisibleDraft
from smartapp.launch.roles import may_review, practitioner_reference
from smartapp.launch.style import StyleCache

# The header the page's script sends, and what it asks for in answer to an action.
PARTIAL_HEADER = "x-requested-with"
SENTENCE_UPDATE = "provenote-sentence"
REVIEW_UPDATE = "provenote-review"
SOURCE_FRAGMENT = "provenote-source"
SIGN_PREVIEW = "provenote-sign"
REVIEW_NOTES = "needs_review"


def workspace_values(
    summary: Summary, state: EvidenceState, drafted: dict[str, Sentence]
) -> dict[str, Any]:
    """The review workspace's view of a draft: the one "Needs review" list (the draft's own
    review notes in full, then every other sentence that was flagged), the remaining sections,
    the progress through the flags and each sentence's labelled citations."""
    progress = review_progress(summary, drafted)
    flagged = set(progress.flagged)
    notes = [s for s in summary.sections if s.key == REVIEW_NOTES]
    return {
        "summary": summary,
        "progress": progress,
        "review_notes": [sentence for section in notes for sentence in section.sentences],
        "flagged_elsewhere": [
            s for s in summary.sentences() if s.id in flagged and s.section != REVIEW_NOTES
        ],
        "draft_sections": [s for s in summary.sections if s.key != REVIEW_NOTES],
        "citations": citations(summary, state),
        "review_items": review_items,
    }


def patient_banner(state: EvidenceState) -> PatientInfoAttributes | None:
    for fact in state.facts.get("patient_info", []):
        if isinstance(fact.attributes, PatientInfoAttributes):
            return fact.attributes
    return None


def draft_json(draft: DraftRow, written: WriteBackRow | None) -> dict[str, Any]:
    """The draft as ``/api/drafts/{id}`` gives it: the bundle, the text, and its write-back."""
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
            "remote": f"{written.remote_type}/{written.remote_id}" if written.remote_id else None,
        },
    }


def _drafted(edits: list[DraftEditRow]) -> dict[str, Sentence]:
    """Each reviewed sentence as drafted: the record its first edit kept."""
    first: dict[str, Sentence] = {}
    for row in edits:
        if row.drafted and row.sentence_id not in first:
            first[row.sentence_id] = Sentence.model_validate(row.drafted)
    return first


@dataclass(frozen=True, slots=True)
class Submission:
    """A review form that passed the checks: what it says and the revision it saw."""

    form: dict[str, str]
    revision: int


@dataclass(frozen=True, slots=True)
class ReviewPages:
    """What renders the review: the drafts, who may review, the CSRF tokens' secret and the EHR's
    styling."""

    drafts: DraftService
    settings: Settings
    secret: bytes
    styles: StyleCache

    async def values(
        self, visible: VisibleDraft, draft: DraftRow, message: str | None = None
    ) -> dict[str, Any]:
        """What the review templates are rendered with."""
        context = visible.context
        opened = reviewed(draft)
        practitioner = practitioner_reference(context.fhir_user)
        edits = await self.drafts.edits(draft.id)
        return {
            "draft": draft,
            **workspace_values(opened.summary, opened.state, _drafted(edits)),
            # A document about another patient first: the physician sees why it was left out.
            "documents": sorted(opened.state.documents, key=lambda d: not d.other_patient),
            "edits": edits,
            "editable": draft.status == DraftStatus.PRELIMINARY,
            "practitioner": practitioner,
            "may_review": may_review(self.settings, context) and practitioner is not None,
            "write_back_words": WRITE_BACK_WORDS,
            "user": context.fhir_user,
            "csrf": csrf_token(self.secret, visible.session_id),
            "write_back": await self.drafts.write_back_of(draft.id),
            "message": message,
            "ehr_copy_url": None,
            "record_changed": bool(draft.record_changed),
            "context": context,
            "patient": patient_banner(opened.state),
            "smart_style": await self.styles.get(context.smart_style_url),
        }

    async def answer(
        self,
        request: Request[Any, Any, Any],
        visible: VisibleDraft,
        message: str | None = None,
        status: int = 200,
        acted: str | None = None,
        draft: DraftRow | None = None,
        ehr_copy: bool = False,
    ) -> Response[Any]:
        """The review again, as the asker wants it: the changed sentence with the counts that
        moved (the workspace's script), the whole review (older scripts), else a redirect or
        page. ``draft`` is the draft as an action just left it, else it is loaded."""
        if draft is None:
            draft = await self.drafts.load(visible.draft.id) or visible.draft
        values = await self.values(visible, draft, message)
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

    async def checked_form(
        self, request: Request[Any, Any, Any], visible: VisibleDraft
    ) -> Submission | Response[Any]:
        """The form, if its CSRF token is right, its user a reviewer and its revision given;
        else the refusal to answer with."""
        form = await csrf_checked_form(request, self.secret, visible.session_id)
        if form is None:
            return error_page(
                "The form's security token is missing or wrong; reload the page and try again.",
                403,
                heading="Request refused",
            )
        if not may_review(self.settings, visible.context):
            roles = " or ".join(self.settings.reviewer_roles).lower()
            user = visible.context.fhir_user or "an unknown user"
            message = f"Only a {roles} can review and sign drafts; you are signed in as {user}."
            return await self.answer(request, visible, message, 403)
        if not form.get("revision", "").isdigit():
            return error_page("The form did not say which revision it saw.", 400)
        return Submission(form, int(form["revision"]))

    async def signing_form(
        self, request: Request[Any, Any, Any], visible: VisibleDraft
    ) -> tuple[Submission, str] | Response[Any]:
        """A signature's form, or its preview's, checked as every review form is, and the
        Practitioner who attests: only a Practitioner can, whatever the reviewer roles allow."""
        submitted = await self.checked_form(request, visible)
        if isinstance(submitted, Response):
            return submitted
        practitioner = practitioner_reference(visible.context.fhir_user)
        if practitioner is None:
            user = visible.context.fhir_user or "an unknown user"
            message = f"Only a practitioner can sign; you are signed in as {user}."
            return await self.answer(request, visible, message, 403)
        return submitted, practitioner
