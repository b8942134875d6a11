"""What a draft's reviewer reads beside it: a citation's source (the page with the quote
marked, or the resource's fields), a page image, the EHR's copy of the note, and the draft as
JSON. Each is guarded like the review (``smartapp.launch.guards``) and changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Controller, Request, get
from litestar.di import Provide
from litestar.params import FromPath
from litestar.response import Response
from litestar.types import Dependencies

from fhir_mapping.document_reference import ehr_note_text
from pipeline.ingestion.pdf import text_span_boxes
from pipeline.text.rendering import render
from smartapp.core.responses import error_page, html
from smartapp.core.tables import DraftRow
from smartapp.drafts.pages import PARTIAL_HEADER, SOURCE_FRAGMENT, draft_json, patient_banner
from smartapp.drafts.review import reviewed
from smartapp.drafts.sources import attachment_of, sentence_citations, source_view
from smartapp.launch.guards import SeenDraft, launched_for_draft, visible_draft
from smartapp.launch.roles import may_review
from smartapp.state import Access, Drafts, Jobs, Provenote


async def _record_of(jobs: Jobs, draft: DraftRow) -> dict[str, Any] | None:
    """The record the draft was made from, kept with its job."""
    job = await jobs.get(draft.job_id)
    return job.record if job is not None else None


class DraftSourceController(Controller):
    guards = (launched_for_draft,)
    # Litestar's own (mutable) attribute, as Litestar declares it.
    dependencies: Dependencies | None = {  # noqa: RUF012
        "visible": Provide(visible_draft, sync_to_thread=False)
    }

    @get("/drafts/{draft_id:str}/ehr-copy")
    async def ehr_copy(self, drafts: Drafts, access: Access, visible: SeenDraft) -> Response[str]:
        """The EHR's copy of the note as it is there now, beside the draft (after a 412)."""
        draft = visible.draft
        written = await drafts.write_back_of(draft.id)
        if written is None or not written.remote_type or not written.remote_id:
            return error_page("The EHR holds no copy of this draft.", 404, heading="No copy")
        client = access.client_for(visible.session_id, visible.context.iss)
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
        self, drafts: Drafts, visible: SeenDraft, draft_id: FromPath[str]
    ) -> dict[str, Any]:
        return draft_json(visible.draft, await drafts.write_back_of(visible.draft.id))

    @get("/drafts/{draft_id:str}/sentences/{sentence_id:str}/sources/{number:int}")
    async def source(
        self,
        jobs: Jobs,
        visible: SeenDraft,
        request: Request[Any, Any, Any],
        draft_id: FromPath[str],
        sentence_id: FromPath[str],
        number: FromPath[int],
    ) -> Response[str]:
        """One citation opened: the page with the quote marked, or the resource's fields."""
        draft = visible.draft
        opened = reviewed(draft)
        sentence = next((s for s in opened.summary.sentences() if s.id == sentence_id), None)
        cited = sentence_citations(sentence, opened.state) if sentence is not None else []
        if sentence is None or not 1 <= number <= len(cited):
            return error_page("The draft has no such source.", 404, heading="No such source")
        view = source_view(cited[number - 1], opened.state, draft.id)
        ref, page = view.citation.ref, view.page
        if view.document and view.image_url and page and not page.ocr_applied:
            attachment = attachment_of(await _record_of(jobs, draft), view.document)
            if attachment is not None and ref.start is not None and ref.end is not None:
                boxes = await asyncio.to_thread(
                    text_span_boxes, attachment[0], page.number, ref.start, ref.end
                )
                view.boxes = boxes
        values = {"view": view, "sentence": sentence, "draft": draft}
        if request.headers.get(PARTIAL_HEADER) == SOURCE_FRAGMENT:
            return html(render("app/_source.html.j2", **values))
        banner = {"context": visible.context, "patient": patient_banner(opened.state)}
        return html(render("app/source.html.j2", **values, **banner))

    @get("/drafts/{draft_id:str}/documents/{document_id:str}/pages/{number:int}")
    async def document_page(
        self,
        provenote: Provenote,
        jobs: Jobs,
        visible: SeenDraft,
        draft_id: FromPath[str],
        document_id: FromPath[str],
        number: FromPath[int],
    ) -> Response[Any]:
        """A page of a PDF or a scanned note, as the image the source pane marks: for reviewers
        only (the costliest request there is), rendered within a pixel bound, a few at a time."""
        draft = visible.draft
        if not may_review(provenote.settings, visible.context):
            return error_page("Page images are for reviewers.", 403, heading="Refused")
        state = reviewed(draft).state
        document = next((d for d in state.documents if d.id == document_id), None)
        record = await _record_of(jobs, draft) if document else None
        attachment = attachment_of(record, document) if document else None
        image = None
        if attachment is not None:
            key = (draft.id, document_id, number)
            image = await provenote.page_images.get(key, attachment[0], attachment[1], number)
        if image is None:
            return error_page("The draft has no such page.", 404, heading="No such page")
        return Response(image, media_type="image/png")
