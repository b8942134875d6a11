"""Attachments to pages: every content type, and every bad input answered with a recorded error."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from pypdf import PdfWriter

from pipeline.ingestion.attachments import parse_media_type, read_attachment
from pipeline.settings import PipelineSettings
from pipeline.text.html_text import html_to_text
from tests.conftest import ROOT


def blank_pdf(pages: int = 1, password: str | None = None, owner: str | None = None) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(200, 200)
    if password is not None or owner is not None:
        writer.encrypt(password or "", owner_password=owner)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_media_type_and_charset_are_parsed() -> None:
    assert parse_media_type("Text/Plain; charset=ISO-8859-1") == (
        "text/plain",
        {"charset": "ISO-8859-1"},
    )
    assert parse_media_type(None) == ("", {})


@pytest.mark.parametrize("charset", ["utf-8", "iso-8859-1", "utf-16", "cp1252"])
def test_plain_text_is_decoded_in_its_declared_charset(
    charset: str, settings: PipelineSettings
) -> None:
    text = "Pénicilline allergy; température 38.5 °C"
    read = read_attachment(text.encode(charset), f"text/plain; charset={charset}", settings)
    assert read.errors == []
    assert read.pages[0].text == text
    assert read.pages[0].has_text


def test_undeclared_charset_must_be_utf8_or_detected(settings: PipelineSettings) -> None:
    read = read_attachment("Café au lait".encode(), "text/plain", settings)
    assert read.pages[0].text == "Café au lait"


def test_text_that_is_not_its_declared_charset_is_an_error(settings: PipelineSettings) -> None:
    read = read_attachment("naïve".encode("latin-1"), "text/plain; charset=utf-8", settings)
    assert read.pages == []
    assert read.errors and "not valid utf-8" in read.errors[0]


def test_unknown_charset_is_an_error(settings: PipelineSettings) -> None:
    read = read_attachment(b"hello", "text/plain; charset=klingon-8", settings)
    assert read.errors == ["unknown charset 'klingon-8'"]


def test_html_becomes_text_without_scripts(settings: PipelineSettings) -> None:
    html = (
        "<html><head><style>p{}</style></head><body><h1>Plan</h1><p>Continue aspirin.</p>"
        "<script>alert('x')</script><ul><li>Follow up in 2 weeks</li></ul>"
        "<p>Na &lt; 135 &amp; falling</p></body></html>"
    )
    read = read_attachment(html.encode(), "text/html; charset=utf-8", settings)
    text = read.pages[0].text
    assert "alert" not in text and "p{}" not in text
    assert text.splitlines() == [
        "Plan",
        "",
        "Continue aspirin.",
        "",
        "- Follow up in 2 weeks",
        "",
        "Na < 135 & falling",
    ]


def test_html_table_cells_are_separated() -> None:
    assert "Sodium 135" in html_to_text("<table><tr><td>Sodium</td><td>135</td></tr></table>")


def test_empty_attachment_is_an_error(settings: PipelineSettings) -> None:
    assert read_attachment(b"", "text/plain", settings).errors == [
        "empty attachment: it holds no data"
    ]


def test_attachment_over_the_size_limit_is_not_read() -> None:
    small = PipelineSettings(max_attachment_bytes=10)
    read = read_attachment(b"x" * 11, "text/plain", small)
    assert read.pages == []
    assert read.errors == ["attachment too large: 11 bytes, the limit is 10"]


def test_pdf_labelled_as_text_is_mislabelled(settings: PipelineSettings) -> None:
    read = read_attachment(blank_pdf(), "text/plain", settings)
    assert read.errors == ["mislabelled attachment: declared text/plain, holds application/pdf"]


def test_text_labelled_as_pdf_is_mislabelled(settings: PipelineSettings) -> None:
    read = read_attachment(b"Discharge summary", "application/pdf", settings)
    assert read.errors == ["mislabelled attachment: declared application/pdf, not a PDF"]


def test_binary_labelled_as_text_is_mislabelled(settings: PipelineSettings) -> None:
    read = read_attachment(b"\x00\x01\x02garbage", "text/plain", settings)
    assert read.errors == ["mislabelled attachment: text/plain is binary"]


def test_unsupported_type_is_an_error(settings: PipelineSettings) -> None:
    read = read_attachment(b"PK\x03\x04", "application/zip", settings)
    assert read.errors == ["unsupported content type: application/zip"]


def test_encrypted_pdf_is_an_error(settings: PipelineSettings) -> None:
    read = read_attachment(blank_pdf(password="secret"), "application/pdf", settings)
    assert read.pages == []
    assert read.errors == ["encrypted PDF: it needs a password to open"]


def test_pdf_with_only_an_owner_password_is_read(settings: PipelineSettings) -> None:
    read = read_attachment(blank_pdf(owner="owner"), "application/pdf", settings)
    assert read.errors == []
    assert len(read.pages) == 1


def test_corrupt_pdf_is_an_error(settings: PipelineSettings) -> None:
    read = read_attachment(b"%PDF-1.4\nthis is not a PDF body", "application/pdf", settings)
    assert read.pages == []
    assert read.errors[0].startswith("corrupt PDF:")


def test_blank_page_is_ocrd_and_reported_unread(settings: PipelineSettings) -> None:
    read = read_attachment(blank_pdf(), "application/pdf", settings)
    (page,) = read.pages
    assert page.ocr_applied and not page.has_text
    assert page.error == "no readable text found by OCR"


def test_without_tesseract_the_page_is_unread_not_dropped() -> None:
    no_ocr = PipelineSettings(tesseract_cmd="no-such-tesseract-binary")
    read = read_attachment(blank_pdf(pages=2), "application/pdf", no_ocr)
    assert [page.number for page in read.pages] == [1, 2]
    assert all(not page.has_text and not page.ocr_applied for page in read.pages)
    assert all("OCR unavailable" in (page.error or "") for page in read.pages)


def test_page_limit_reads_the_first_pages_and_says_so() -> None:
    limited = PipelineSettings(max_pdf_pages=2, tesseract_cmd="no-such-tesseract-binary")
    read = read_attachment(blank_pdf(pages=5), "application/pdf", limited)
    assert [page.number for page in read.pages] == [1, 2]
    assert read.errors == ["page limit: read the first 2 of 5 pages"]


HUGE_PAGE_PDF = b"""%PDF-1.4
1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj
2 0 obj <</Type/Pages/Kids[3 0 R]/Count 1>> endobj
3 0 obj <</Type/Page/Parent 2 0 R/MediaBox[0 0 14400 14400]/Contents 4 0 R
/Resources<</Font<</F1 5 0 R>>>>>> endobj
4 0 obj <</Length 44>> stream
BT /F1 24 Tf 100 100 Td (Discharged home) Tj ET
endstream endobj
5 0 obj <</Type/Font/Subtype/Type1/BaseFont/Helvetica>> endobj
trailer <</Root 1 0 R>>
%%EOF
"""
# Rendered, measured and reported in a fresh interpreter: its peak resident memory is the
# render's alone (a 14,400-pt page at the display scale would be ~466 megapixels, >1.3 GB).
PEAK_RSS_PROBE = """
import io, json, resource, sys
from PIL import Image
from pipeline.ingestion.attachments import page_image
data = sys.stdin.buffer.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kind = sys.argv[1]
png = page_image(data, kind, 1)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
size = Image.open(io.BytesIO(png)).size if png else None
print(json.dumps({"grown_kb": after - before, "size": size}))
"""


def _render_in_a_subprocess(data: bytes, content_type: str) -> dict:
    import json
    import subprocess
    import sys

    answer = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_PROBE, content_type],
        input=data,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return json.loads(answer.stdout)


def test_a_pdf_page_of_200_inches_renders_within_the_display_bound() -> None:
    from pipeline.ingestion.attachments import DISPLAY_MAX_PIXELS

    measured = _render_in_a_subprocess(HUGE_PAGE_PDF, "application/pdf")
    width, height = measured["size"]
    assert width * height <= DISPLAY_MAX_PIXELS and width > 1000
    assert measured["grown_kb"] < 300 * 1024  # megabytes, not gigabytes


def test_a_scan_that_declares_too_many_pixels_is_never_decoded() -> None:
    """A 12,000 × 12,000 PNG is 144 megapixels decoded (below Pillow's own refusal), but only
    kilobytes on the wire."""
    buffer = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(buffer, format="PNG")
    bomb = buffer.getvalue()
    assert len(bomb) < 200_000
    measured = _render_in_a_subprocess(bomb, "image/png")
    assert measured["size"] is None
    assert measured["grown_kb"] < 200 * 1024
    read = read_attachment(bomb, "image/png", PipelineSettings())
    assert "exceeds the limit" in read.pages[0].error
