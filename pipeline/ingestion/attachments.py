"""Attachment bytes to pages of text: plain text in any declared charset, HTML, PDF and images.

A bad attachment never raises: its problem is returned as an error for the caller to record on
the document, so every other document is still ingested (ARCHITECTURE.md, safety rules).
"""

from __future__ import annotations

import codecs
import io
from dataclasses import dataclass, field
from email.message import Message

import charset_normalizer
import pypdfium2
from PIL import Image

from pipeline.evidence.model import Page
from pipeline.ingestion.ocr import OcrBudget, OcrUnavailableError, ocr_image
from pipeline.ingestion.pdf import (
    PdfUnreadableError,
    has_usable_text,
    ocr_page,
    page_png,
    read_pdf,
)
from pipeline.settings import PipelineSettings
from pipeline.text.html_text import html_to_text

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/tiff", "image/gif", "image/bmp"})
_PDF_MAGIC = b"%PDF-"
# Pixels per PDF point for a page shown beside the draft (about 110 dpi), and the most pixels
# such a page may have: a tiny PDF can declare a page of 200 inches (14,400 pt), which at that
# scale would be a 466-megapixel image, gigabytes of memory for one request.
DISPLAY_SCALE = 1.5
DISPLAY_MAX_PIXELS = 4_000_000
# A scan with more pixels than this is refused before it is decoded (a decompression bomb), for
# OCR and for display alike; Pillow's own guard is only a warning below twice its limit.
MAX_SCAN_PIXELS = 100_000_000


class ScanTooLargeError(OSError):
    """A scan declares more pixels than MAX_SCAN_PIXELS: it is not decoded."""


def _opened_scan(data: bytes) -> Image.Image:
    """The scan, opened (not yet decoded), refused when it declares too many pixels."""
    image = Image.open(io.BytesIO(data))
    if image.width * image.height > MAX_SCAN_PIXELS:
        image.close()
        raise ScanTooLargeError(
            f"scan of {image.width}×{image.height} pixels exceeds the limit of {MAX_SCAN_PIXELS}"
        )
    return image


@dataclass(slots=True)
class ReadAttachment:
    pages: list[Page] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_media_type(content_type: str | None) -> tuple[str, dict[str, str]]:
    """``text/plain; charset=ISO-8859-1`` → (``text/plain``, {``charset``: ``ISO-8859-1``})."""
    message = Message()
    message["content-type"] = content_type or ""
    media_type = message.get_content_type() if content_type else ""
    params = {key.lower(): str(value) for key, value in message.get_params(failobj=[])[1:]}
    return media_type.lower(), params


def _sniff(data: bytes) -> str | None:
    head = data[:1024].lstrip()
    if head.startswith(_PDF_MAGIC):
        return "application/pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    return None


def _decode(data: bytes, charset: str | None) -> str:
    """Text in its declared charset; undeclared text must be UTF-8 or confidently detected."""
    if charset:
        try:
            codecs.lookup(charset)
        except LookupError as error:
            raise ValueError(f"unknown charset {charset!r}") from error
        try:
            return data.decode(charset)
        except UnicodeDecodeError as error:
            raise ValueError(f"text is not valid {charset}: {error.reason}") from error
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        best = charset_normalizer.from_bytes(data).best()
        if best is None:
            raise ValueError("text has no declared charset and none could be detected") from None
        return str(best)


def _text_page(text: str, settings: PipelineSettings) -> Page:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    usable = has_usable_text(text, settings) or bool(text.strip())
    return Page(number=1, text=text, has_text=usable, error=None if usable else "no text")


def read_attachment(
    data: bytes,
    content_type: str | None,
    settings: PipelineSettings,
    budget: OcrBudget | None = None,
) -> ReadAttachment:
    """Read one attachment; the result lists its pages, or the errors that kept them unread."""
    media_type, params = parse_media_type(content_type)
    if not data:
        return ReadAttachment(errors=["empty attachment: it holds no data"])
    if len(data) > settings.max_attachment_bytes:
        return ReadAttachment(
            errors=[
                f"attachment too large: {len(data)} bytes, the limit is "
                f"{settings.max_attachment_bytes}"
            ]
        )
    sniffed = _sniff(data)
    if sniffed and sniffed != media_type:
        return ReadAttachment(
            errors=[f"mislabelled attachment: declared {media_type or 'no type'}, holds {sniffed}"]
        )
    if media_type == "application/pdf" and sniffed is None:
        return ReadAttachment(
            errors=["mislabelled attachment: declared application/pdf, not a PDF"]
        )
    try:
        if media_type == "application/pdf":
            pages, errors = read_pdf(data, settings, budget)
            return ReadAttachment(pages, errors)
        if media_type in _IMAGE_TYPES:
            return _read_image(data, settings, budget or OcrBudget.for_job(settings))
        if media_type in {"text/plain", "text/markdown", "text/html", "application/xhtml+xml"}:
            if b"\x00" in data[:4096] and "16" not in params.get("charset", "").lower():
                return ReadAttachment(errors=[f"mislabelled attachment: {media_type} is binary"])
            text = _decode(data, params.get("charset"))
            if media_type in {"text/html", "application/xhtml+xml"}:
                text = html_to_text(text)
            return ReadAttachment([_text_page(text, settings)])
    except (PdfUnreadableError, ValueError) as error:
        return ReadAttachment(errors=[str(error)])
    return ReadAttachment(errors=[f"unsupported content type: {media_type or 'none declared'}"])


def _within_pixel_cap(data: bytes, settings: PipelineSettings) -> bytes:
    """The image, shrunk to the OCR pixel cap when it is larger (PNG)."""
    with _opened_scan(data) as image:
        pixels = image.width * image.height
        if pixels <= settings.ocr_max_pixels_per_page:
            return data
        ratio = (settings.ocr_max_pixels_per_page / pixels) ** 0.5
        size = (max(1, int(image.width * ratio)), max(1, int(image.height * ratio)))
        buffer = io.BytesIO()
        image.convert("L").resize(size).save(buffer, format="PNG")
        return buffer.getvalue()


def _read_image(data: bytes, settings: PipelineSettings, budget: OcrBudget) -> ReadAttachment:
    budget.new_document()
    refusal = budget.refusal()
    if refusal is not None:
        return ReadAttachment(
            [Page(number=1, text="", has_text=False, error=refusal)],
            ["OCR limit: 1 page(s) without a text layer were not OCR'd"],
        )
    try:
        with budget.spend():
            ocr = ocr_image(_within_pixel_cap(data, settings), settings)
    except (OcrUnavailableError, OSError, Image.DecompressionBombError) as error:
        return ReadAttachment([Page(number=1, text="", has_text=False, error=str(error))])
    return ReadAttachment([ocr_page(1, ocr, settings)])


def shows_pages(content_type: str | None) -> bool:
    """Whether an attachment has pages to show as images: a PDF or a scan."""
    media_type = parse_media_type(content_type)[0]
    return media_type == "application/pdf" or media_type in _IMAGE_TYPES


def page_image(data: bytes, content_type: str | None, number: int) -> bytes | None:
    """Page ``number`` of a PDF or a scanned image as a PNG a browser shows (TIFF is not one),
    for the review page's source pane, within DISPLAY_MAX_PIXELS whatever size the page
    declares; None for any other attachment, no such page, or a scan too large to decode."""
    media_type = parse_media_type(content_type)[0] or _sniff(data) or ""
    try:
        if media_type == "application/pdf" and number >= 1:
            return page_png(
                data, number - 1, DISPLAY_SCALE, grayscale=False, max_pixels=DISPLAY_MAX_PIXELS
            )
        if media_type in _IMAGE_TYPES and number == 1:
            with _opened_scan(data) as image:
                ratio = min(1.0, (DISPLAY_MAX_PIXELS / (image.width * image.height)) ** 0.5)
                size = (max(1, int(image.width * ratio)), max(1, int(image.height * ratio)))
                image.draft("RGB", size)  # JPEG decodes at the smaller size directly
                shown = image.convert("RGB")
                if shown.size != size:
                    shown = shown.resize(size)
                buffer = io.BytesIO()
                shown.save(buffer, format="PNG")
                return buffer.getvalue()
    except (pypdfium2.PdfiumError, IndexError, OSError, Image.DecompressionBombError):
        return None
    return None
