"""PDF attachments page by page: the text layer with pdfminer.six, OCR where a page has none."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pypdfium2
from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import LAParams, LTAnno, LTChar, LTContainer, LTTextContainer
from pdfminer.pdfdocument import PDFDocument, PDFPasswordIncorrect
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage
from pdfminer.pdfparser import PDFParser

from pipeline.errors import InputError
from pipeline.evidence.model import Page, WordBox
from pipeline.ingestion.ocr import OcrBudget, OcrResult, OcrUnavailableError, ocr_image
from pipeline.settings import PipelineSettings


class PdfUnreadableError(InputError):
    """The PDF as a whole cannot be read: encrypted, corrupt or empty."""


def has_usable_text(text: str, settings: PipelineSettings) -> bool:
    return sum(ch.isalnum() for ch in text) >= max(1, settings.min_text_chars)


def ocr_page(number: int, ocr: OcrResult, settings: PipelineSettings) -> Page:
    """A page read by OCR (a scanned PDF page or an image), flagged unread when OCR found too
    little text to use."""
    usable = has_usable_text(ocr.text, settings)
    return Page(
        number=number,
        text=ocr.text,
        has_text=usable,
        ocr_applied=True,
        ocr_confidence=ocr.confidence,
        words=ocr.words,
        error=None if usable else "no readable text found by OCR",
    )


def _open(data: bytes) -> list[PDFPage]:
    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)))
        return list(PDFPage.create_pages(document))
    except PDFPasswordIncorrect as error:
        raise PdfUnreadableError("encrypted PDF: it needs a password to open") from error
    except Exception as error:  # pdfminer raises many unrelated types on malformed input
        raise PdfUnreadableError(f"corrupt PDF: {type(error).__name__}: {error}") from error


def _layout_reader() -> tuple[PDFPageInterpreter, PDFPageAggregator]:
    """pdfminer's page interpreter and the device it lays pages out on, set up one way for
    reading the text and for finding a quote on the page again."""
    resources = PDFResourceManager()
    device = PDFPageAggregator(resources, laparams=LAParams())
    return PDFPageInterpreter(resources, device), device


def _text_layers(pages: list[PDFPage]) -> Iterator[tuple[str, str | None]]:
    """Each page's text layer, and the error if that page alone could not be parsed."""
    interpreter, device = _layout_reader()
    for page in pages:
        try:
            interpreter.process_page(page)
            layout = device.get_result()
        except Exception as error:  # one broken page must not lose the others
            yield "", f"page could not be parsed: {type(error).__name__}: {error}"
            continue
        yield "".join(item.get_text() for item in layout if isinstance(item, LTTextContainer)), None


def render_scale(width_pt: float, height_pt: float, settings: PipelineSettings) -> float:
    """Points to pixels at the OCR DPI, lowered so the image stays within the pixel cap."""
    scale = settings.ocr_dpi / 72
    pixels = width_pt * height_pt * scale * scale
    if pixels > settings.ocr_max_pixels_per_page:
        scale *= (settings.ocr_max_pixels_per_page / pixels) ** 0.5
    return scale


def _png(page: pypdfium2.PdfPage, scale: float, grayscale: bool) -> bytes:
    buffer = io.BytesIO()
    page.render(scale=scale, grayscale=grayscale).to_pil().save(buffer, format="PNG")
    return buffer.getvalue()


def page_png(
    data: bytes,
    index: int,
    scale: float,
    *,
    grayscale: bool = True,
    max_pixels: int | None = None,
) -> bytes:
    """Page ``index`` of a PDF as a PNG at ``scale`` pixels per point (lowered so the image has
    at most ``max_pixels``), for the review page, which shows the page beside the sentence that
    quotes it (IndexError: no such page)."""
    document = pypdfium2.PdfDocument(data)
    try:
        page = document[index]
        width, height = page.get_size()
        if max_pixels is not None and width * height * scale * scale > max_pixels:
            scale = (max_pixels / max(width * height, 1.0)) ** 0.5
        return _png(page, scale, grayscale)
    finally:
        document.close()


def _page_png(data: bytes, index: int, settings: PipelineSettings) -> bytes:
    """Page ``index`` for OCR: grey, at the OCR resolution within the pixel cap."""
    document = pypdfium2.PdfDocument(data)
    try:
        page = document[index]
        width, height = page.get_size()
        return _png(page, render_scale(width, height, settings), grayscale=True)
    finally:
        document.close()


def _characters(item: Any) -> Iterator[tuple[str, tuple[float, float, float, float] | None]]:
    """Each character of a layout item in the order ``get_text`` joins them, with its box
    (None for the spaces and line ends pdfminer adds, which have none)."""
    if isinstance(item, LTChar):
        yield item.get_text(), item.bbox
    elif isinstance(item, LTAnno):
        yield item.get_text(), None
    elif isinstance(item, LTContainer):
        for child in item:
            yield from _characters(child)


def text_span_boxes(data: bytes, number: int, start: int, end: int) -> list[WordBox]:
    """Where characters ``start``–``end`` of page ``number``'s text layer lie on the page: one
    box per line of the span, in fractions of the page (``WordBox``). The page is laid out again
    exactly as ``read_pdf`` read it, so offsets into its stored text land on the same characters.
    """
    pages = _open(data)
    if not 1 <= number <= len(pages):
        return []
    page = pages[number - 1]
    interpreter, device = _layout_reader()
    interpreter.process_page(page)
    x0, y0, x1, y1 = page.mediabox
    width, height = (x1 - x0) or 1, (y1 - y0) or 1
    lines: dict[float, list[float]] = {}
    offset = 0
    for item in device.get_result():
        if not isinstance(item, LTTextContainer):
            continue
        for text, box in _characters(item):
            if box is not None and start <= offset < end:
                left, bottom, right, top = box
                line = lines.setdefault(round(bottom, 0), [left, bottom, right, top])
                line[0], line[1] = min(line[0], left), min(line[1], bottom)
                line[2], line[3] = max(line[2], right), max(line[3], top)
            offset += len(text)
    return [
        WordBox(
            start=start,
            end=end,
            left=(left - x0) / width,
            top=(y1 - top) / height,
            width=(right - left) / width,
            height=(top - bottom) / height,
        )
        for left, bottom, right, top in lines.values()
    ]


def read_pdf(
    data: bytes, settings: PipelineSettings, budget: OcrBudget | None = None
) -> tuple[list[Page], list[str]]:
    """Pages of a PDF, OCR'd where the text layer is unusable and the OCR budget allows; errors
    that concern the whole file (skipped pages included).

    Raises :class:`PdfUnreadableError` when nothing at all can be read.
    """
    if budget is None:
        budget = OcrBudget.for_job(settings)
    budget.new_document()
    skipped = 0
    pdf_pages = _open(data)
    if not pdf_pages:
        raise PdfUnreadableError("empty PDF: it has no pages")
    errors: list[str] = []
    if len(pdf_pages) > settings.max_pdf_pages:
        errors.append(
            f"page limit: read the first {settings.max_pdf_pages} of {len(pdf_pages)} pages"
        )
        pdf_pages = pdf_pages[: settings.max_pdf_pages]
    pages: list[Page] = []
    for index, (text, page_error) in enumerate(_text_layers(pdf_pages)):
        number = index + 1
        if has_usable_text(text, settings):
            pages.append(Page(number=number, text=text, has_text=True, error=page_error))
            continue
        refusal = budget.refusal()
        if refusal is not None:
            skipped += 1
            pages.append(Page(number=number, text=text, has_text=False, error=refusal))
            continue
        try:
            with budget.spend():
                ocr = ocr_image(_page_png(data, index, settings), settings)
        except (OcrUnavailableError, pypdfium2.PdfiumError) as error:
            pages.append(Page(number=number, text=text, has_text=False, error=str(error)))
            continue
        pages.append(ocr_page(number, ocr, settings))
    if skipped:
        errors.append(f"OCR limit: {skipped} page(s) without a text layer were not OCR'd")
    return pages, errors
