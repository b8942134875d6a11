"""The review workspace's parts: citations that read as what they are, the source a citation
opens (with the quote's place on a PDF page or a scan), the progress through the flags, the
checker's verdict on an edit before it is saved, and what the page's script is answered."""

from __future__ import annotations

import base64
import io
import re

import httpx
from PIL import Image

from fhir_mapping.documents import attachment_in_record
from pipeline.checking.review import accept, delete, edit, review_items, review_progress, word_diff
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.ingestion.attachments import page_image, read_attachment
from pipeline.ingestion.ocr import _from_tsv
from pipeline.ingestion.pdf import page_png, read_pdf, text_span_boxes
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.drafts.sources import resource_label, sentence_citations, source_view
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import SAMPLE_PDF
from tests.review_support import ONE_FLAG, PDF_PATIENT, flagged_ids, form_values
from tests.smartapp.test_review_page import open_draft

QUOTE = "Continue Cipro for an additional two days for his UTI."


def _stay_with_an_order_a_result_and_a_note() -> dict:
    return fx.stay(
        fx.medication_request(
            "m1", "aspirin 81 MG Oral Tablet", dose="81 mg", frequency=(1, 1, "d")
        ),
        fx.observation("o1", "Glucose", 150, "mg/dL"),
        fx.document_reference(
            "d1",
            fx.attachment(
                "# Hospital Course\nAdmitted with chest pain; ruled out for infarction.\n"
            ),
        ),
    )


def test_citations_read_as_orders_results_and_pages_with_the_raw_reference_kept() -> None:
    state = evidence_from_fhir(
        _stay_with_an_order_a_result_and_a_note(), settings=PipelineSettings()
    )
    order = next(f for f in state.all_facts() if f.category == "medication")
    result = next(f for f in state.all_facts() if f.category == "lab_result")
    assert resource_label(order, "MedicationRequest/m1") == (
        "Order: aspirin 81 MG Oral Tablet 81 mg once daily (active)"
    )
    assert resource_label(result, "Observation/o1") == "Glucose 150 mg/dL (H), 2024-03-02"

    summary = summarize_evidence(state, settings=PipelineSettings())
    cited = [c for s in summary.sentences() for c in sentence_citations(s, state)]
    note = next(c for c in cited if c.ref.document)
    assert re.fullmatch(r".+, \d{4}-\d{2}-\d{2}, p\. 1", note.label)
    assert note.raw.startswith("DocumentReference/d1 · content[0].attachment · characters ")
    view = source_view(note, state, "draft-1")
    assert view.text is not None and view.text.quote == note.ref.quote
    assert view.image_url is None  # a text note has no page image
    order_view = source_view(
        next(c for c in cited if c.ref.resource == "MedicationRequest/m1"), state, "d"
    )
    assert ("Drug", "aspirin 81 MG Oral Tablet") in order_view.rows
    assert ("Status", "active") in order_view.rows


def test_ocr_keeps_each_words_box_and_its_characters_in_the_text() -> None:
    tsv = (
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "1\t1\t0\t0\t0\t0\t0\t0\t1000\t2000\t-1\t\n"
        "5\t1\t1\t1\t1\t1\t100\t200\t80\t20\t95\tTake\n"
        "5\t1\t1\t1\t1\t2\t190\t200\t60\t20\t90\taspirin\n"
        "5\t1\t2\t1\t1\t1\t100\t400\t50\t20\t80\tDaily\n"
    )
    read = _from_tsv(tsv)
    assert read.text == "Take aspirin\n\nDaily"
    assert [read.text[w.start : w.end] for w in read.words] == ["Take", "aspirin", "Daily"]
    assert (read.words[1].left, read.words[1].top) == (0.19, 0.1)
    assert read.words[2].height == 0.01


def test_a_quote_is_marked_in_the_same_place_on_the_pdf_page_and_on_its_scan() -> None:
    """The scan is the PDF's own page 2 rendered: the OCR boxes of a quote and the text layer's
    boxes of the same quote must coincide (to 2 % of the page)."""
    settings = PipelineSettings()
    pdf = SAMPLE_PDF.read_bytes()
    pages, _ = read_pdf(pdf, settings)
    text = pages[1].text
    start = text.index(QUOTE)
    layer = text_span_boxes(pdf, 2, start, start + len(QUOTE))
    scan = read_attachment(page_png(pdf, 1, 300 / 72), "image/png", settings).pages[0]
    scan_start = scan.text.index("Continue Cipro")
    words = [w for w in scan.words if scan_start <= w.start < scan_start + len(QUOTE)]
    assert len(layer) == 1 and words
    assert abs(layer[0].top - words[0].top) < 0.02
    assert abs(layer[0].left - words[0].left) < 0.02
    assert 0 < layer[0].width < 1 and 0 < layer[0].height < 0.05
    earlier = text.index("Take medications regularly.")
    assert text_span_boxes(pdf, 2, earlier, earlier + 4)[0].top < layer[0].top


def test_page_images_come_from_pdfs_and_scans_only() -> None:
    pdf = SAMPLE_PDF.read_bytes()
    png = page_image(pdf, "application/pdf", 2)
    assert png is not None and Image.open(io.BytesIO(png)).format == "PNG"
    assert page_image(pdf, "application/pdf", 9) is None
    tiff = io.BytesIO()
    Image.new("L", (40, 20), 255).save(tiff, format="TIFF")
    shown = page_image(tiff.getvalue(), "image/tiff", 1)
    assert shown is not None and Image.open(io.BytesIO(shown)).format == "PNG"
    assert page_image(b"plain words", "text/plain", 1) is None
    assert page_image(b"%PDF-1.4 broken", "application/pdf", 1) is None


def test_an_attachment_is_found_inline_or_in_a_binary_of_the_record() -> None:
    data = b"%PDF-1.4 bytes"
    encoded = base64.b64encode(data).decode()
    record = {
        "resourceType": "Bundle",
        "entry": [
            {
                "resource": {
                    "resourceType": "DocumentReference",
                    "id": "a",
                    "content": [
                        {"attachment": {"contentType": "application/pdf", "data": encoded}}
                    ],
                }
            },
            {
                "resource": {
                    "resourceType": "DocumentReference",
                    "id": "b",
                    "content": [{"attachment": {"url": "http://ehr/fhir/Binary/x"}}],
                }
            },
            {
                "resource": {
                    "resourceType": "Binary",
                    "id": "x",
                    "contentType": "image/png",
                    "data": encoded,
                }
            },
        ],
    }
    assert attachment_in_record(record, "DocumentReference/a", "content[0].attachment") == (
        data,
        "application/pdf",
    )
    assert attachment_in_record(record, "DocumentReference/b", "content[0].attachment") == (
        data,
        "image/png",
    )
    assert attachment_in_record(record, "DocumentReference/a", "content[3].attachment") is None
    assert attachment_in_record(record, "DocumentReference/z", "content[0].attachment") is None


def test_progress_counts_accepted_edited_and_deleted_flags_as_resolved() -> None:
    state = evidence_from_fhir(
        _stay_with_an_order_a_result_and_a_note(), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, settings=PipelineSettings())
    # The draft's own flags (this stay names no reason: its principal diagnosis is flagged) stay
    # open throughout; three more are raised and resolved.
    already = review_progress(summary, {})
    sentences = [s for s in summary.sentences() if s.citations and not s.flagged][:3]
    flagged_summary = summary
    for sentence in sentences:
        raised = sentence.model_copy(update={"flags": [SentenceFlag(code="conflict", reason="x")]})
        flagged_summary = _replaced(flagged_summary, raised)
    start = review_progress(flagged_summary, {})
    assert (start.resolved, start.total) == (0, already.total + 3)
    first, second, third = sentences
    drafted = {
        s.id: next(x for x in flagged_summary.sentences() if x.id == s.id) for s in sentences
    }
    done, _ = accept(flagged_summary, first.id)
    done, _ = edit(done, second.id, second.text, state)
    done, _ = delete(done, third.id)
    progress = review_progress(done, drafted)
    assert (progress.resolved, progress.total) == (3, already.total + 3)
    assert progress.open == already.open
    assert [s.id for s in progress.deleted] == [third.id]


def _replaced(summary, sentence: Sentence):
    sections = [
        section.model_copy(
            update={
                "sentences": [sentence if s.id == sentence.id else s for s in section.sentences]
            }
        )
        for section in summary.sections
    ]
    return summary.model_copy(update={"sections": sections})


def test_an_edits_changes_are_shown_word_by_word() -> None:
    diff = word_diff("Aspirin 81 mg daily.", "Aspirin 162 mg daily at night.")
    assert [(part.change, part.text) for part in diff] == [
        ("same", "Aspirin"),
        ("removed", "81"),
        ("added", "162"),
        ("same", "mg"),
        ("removed", "daily."),
        ("added", "daily at night."),
    ]


def test_one_reason_given_by_many_flags_is_listed_once() -> None:
    sentence = Sentence(
        id="s",
        section="medications",
        text="Orders without a complete dosage: a; b.",
        citations=[],
        flags=[SentenceFlag(code="incomplete_medication", reason="a")] * 3,
    )
    assert len(review_items(sentence)) == 1


def _one_flag_draft(app, sandbox) -> tuple[httpx.Client, str, str, str]:
    """A browser, ONE_FLAG's new draft, its review page and the id of its flagged sentence."""
    browser, draft = open_draft(app, sandbox, ONE_FLAG)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    (flagged,) = flagged_ids(page)
    return browser, draft, page, flagged


def test_the_checker_answers_an_edit_being_typed_and_stores_nothing(app, review_sandbox) -> None:
    browser, draft, page, flagged = _one_flag_draft(app, review_sandbox)
    url = f"{app.base_url}/drafts/{draft}/sentences/{flagged}/check"
    answer = browser.post(url, data=form_values(page) | {"text": "Aspirin 999 mg daily."})
    assert answer.status_code == 200
    checked = answer.json()
    assert checked["verdict"] == "unsupported" and checked["flagged"]
    changes = {part["change"]: part["text"] for part in checked["diff"]}
    assert changes["added"] == "Aspirin 999 mg daily."
    assert changes["removed"].startswith("Orders without a complete dosage:")
    # Nothing stored: the draft is still at its first revision, without the typed words.
    assert '<span id="revision">1</span>' in browser.get(f"{app.base_url}/drafts/{draft}").text
    assert "999 mg" not in browser.get(f"{app.base_url}/api/drafts/{draft}").json()["markdown"]
    refused = browser.post(url, data={"revision": "1", "text": "x"})
    assert refused.status_code == 403
    empty = browser.post(url, data=form_values(page) | {"text": "  "})
    assert empty.status_code == 400 and "cannot be empty" in empty.json()["error"]


def test_the_script_gets_one_sentence_and_the_counts_and_a_stale_revision_is_refused(
    app, review_sandbox
) -> None:
    browser, draft, page, flagged = _one_flag_draft(app, review_sandbox)
    url = f"{app.base_url}/drafts/{draft}/sentences/{flagged}"
    script = {"x-requested-with": "provenote-sentence"}
    update = browser.post(url, data=form_values(page) | {"action": "accept"}, headers=script)
    assert update.status_code == 200
    assert update.text.startswith('<div id="update" data-revision="2"')
    assert f'<li id="{flagged}" class="sentence acknowledged"' in update.text
    assert "<strong>1 of 1</strong> flags resolved" in update.text
    assert 'id="section-' not in update.text  # the rest of the draft is not sent again
    stale = browser.post(url, data=form_values(page) | {"action": "delete"}, headers=script)
    assert stale.status_code == 409 and "someone else changed this draft" in stale.text


def test_without_scripts_sign_shows_what_will_be_written_and_changes_nothing(
    app, review_sandbox
) -> None:
    browser, draft, page, flagged = _one_flag_draft(app, review_sandbox)
    accepted = browser.post(
        f"{app.base_url}/drafts/{draft}/sentences/{flagged}",
        data=form_values(page) | {"action": "accept"},
    ).text
    preview = browser.post(
        f"{app.base_url}/drafts/{draft}/sign/preview", data=form_values(accepted)
    )
    assert preview.status_code == 200
    assert 'id="confirm-sign"' in preview.text and "final (now preliminary)" in preview.text
    assert review_sandbox.practitioner in preview.text
    assert "signed by" in preview.text.split('id="note-preview"', 1)[1]
    api = browser.get(f"{app.base_url}/api/drafts/{draft}").json()
    assert api["status"] == "preliminary"
    stale = browser.post(f"{app.base_url}/drafts/{draft}/sign/preview", data=form_values(page))
    assert stale.status_code == 409


def test_page_images_and_sources_are_served_for_the_drafts_own_documents_only(
    app, review_sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox, PDF_PATIENT)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    sources = re.findall(r'href="(/drafts/[^"]+/sources/\d+)"[^>]*>\[\d+\] Scanned consult', page)
    assert sources
    opened = browser.get(f"{app.base_url}{sources[0]}").text
    image = re.search(r'<img src="([^"]+)"', opened).group(1)
    assert opened.count('class="mark-box"') >= 1 and "read by OCR" in opened
    png = browser.get(f"{app.base_url}{image}")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content.startswith(b"\x89PNG")
    assert browser.get(f"{app.base_url}{image[:-1]}9").status_code == 404
    assert browser.get(f"{app.base_url}/drafts/{draft}/documents/doc-x/pages/1").status_code == 404
    assert browser.get(f"{app.base_url}{sources[0][:-1]}99").status_code == 404
    stranger = httpx.Client(follow_redirects=True)
    assert stranger.get(f"{app.base_url}{image}").status_code in {401, 403, 404}
