"""The clinical PDFs in ../shared/data/pdfs: text layers extracted, scanned pages OCR'd."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from functools import cache

import pypdfium2
import pytest

from pipeline.ingestion.attachments import read_attachment
from pipeline.settings import PipelineSettings
from tests.conftest import ARTIFACTS, PDFS, SHARED_DATA

pytestmark = pytest.mark.shared_data

TEXT_PDFS = [
    "hl7/UD_sample.pdf",
    "hl7/McBee_L1_20151116_Embedded.pdf",
    "mosaicx/P001_CT_2025-08-01.pdf",
    "mosaicx/P001_CT_2025-09-10.pdf",
    "mosaicx/sample_patient_vitals.pdf",
    "jsl/PDF_Deid_Deidentification_0.pdf",
    "aci-bench-print/note_1_D2N001.pdf",
]
MIXED = PDFS / "derived-mixed" / "mixed_PDF_Deid_Deidentification_1__p2_image.pdf"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def recall(reference: str, candidate: str) -> float:
    """Share of the reference's word occurrences that the candidate also has."""
    wanted, found = Counter(words(reference)), Counter(words(candidate))
    return sum(min(count, found[word]) for word, count in wanted.items()) / sum(wanted.values())


def record(name: str, value: float) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps({name: round(value, 4)}))
    print(f"{name}: {value:.4f}")


@cache
def read_pdf_file(relative: str) -> tuple:
    read = read_attachment((PDFS / relative).read_bytes(), "application/pdf", PipelineSettings())
    return tuple(read.pages), tuple(read.errors)


@pytest.mark.parametrize("relative", TEXT_PDFS)
def test_text_layer_pages_are_extracted_without_ocr(relative: str) -> None:
    pages, errors = read_pdf_file(relative)
    assert errors == ()
    assert pages and all(page.has_text for page in pages)
    assert not any(page.ocr_applied for page in pages if len(page.text) > 200)


def test_printed_aci_bench_note_matches_its_csv_text() -> None:
    with (SHARED_DATA / "aci-bench" / "train.csv").open(newline="", encoding="utf-8") as stream:
        note = next(
            row["note"] for row in csv.DictReader(stream) if row["encounter_id"] == "D2N001"
        )
    pages, _ = read_pdf_file("aci-bench-print/note_1_D2N001.pdf")
    token_recall = recall(note, "\n".join(page.text for page in pages))
    record("d2n001_token_recall", token_recall)
    assert token_recall >= 0.95


def test_mixed_pdf_ocrs_only_its_image_page_and_reads_it() -> None:
    pages, errors = read_pdf_file(str(MIXED.relative_to(PDFS)))
    assert errors == ()
    assert [page.ocr_applied for page in pages] == [False, True, False]
    assert all(page.has_text for page in pages)
    assert pages[1].ocr_confidence is not None and 0.5 < pages[1].ocr_confidence <= 1.0
    truth = MIXED.with_name(MIXED.stem + ".page2_original_text_layer.txt").read_text()
    word_recall = recall(truth, pages[1].text)
    record("mixed_page2_ocr_word_recall", word_recall)
    assert word_recall >= 0.8


@pytest.mark.parametrize(
    ("relative", "page_count"),
    [
        ("jsl/PDF_Deid_Deidentification_Hard_0.pdf", 2),
        ("jsl/PDF_Deid_Deidentification_Medium_0.pdf", 4),
    ],
)
def test_scanned_pages_are_all_ocrd(relative: str, page_count: int) -> None:
    pages, errors = read_pdf_file(relative)
    assert errors == ()
    assert len(pages) == page_count
    assert all(page.ocr_applied and page.has_text for page in pages)
    assert all(page.ocr_confidence is not None for page in pages)


def test_scanned_pdf_without_tesseract_is_flagged_page_by_page() -> None:
    no_ocr = PipelineSettings(tesseract_cmd="no-such-tesseract-binary")
    read = read_attachment(MIXED.read_bytes(), "application/pdf", no_ocr)
    assert [page.has_text for page in read.pages] == [True, False, True]
    assert "OCR unavailable" in (read.pages[1].error or "")


def test_png_scan_attachment_is_ocrd(settings: PipelineSettings) -> None:
    document = pypdfium2.PdfDocument((PDFS / "aci-bench-print" / "note_1_D2N001.pdf").read_bytes())
    buffer = io.BytesIO()
    document[0].render(scale=300 / 72, grayscale=True).to_pil().save(buffer, format="PNG")
    document.close()
    pages, _ = read_pdf_file("aci-bench-print/note_1_D2N001.pdf")
    read = read_attachment(buffer.getvalue(), "image/png", settings)
    (page,) = read.pages
    assert page.ocr_applied and page.has_text
    assert recall(pages[0].text, page.text) >= 0.9


def test_truncated_pdf_is_reported_corrupt(settings: PipelineSettings) -> None:
    data = (PDFS / "hl7" / "UD_sample.pdf").read_bytes()
    read = read_attachment(data[: len(data) // 2], "application/pdf", settings)
    assert read.pages == []
    assert read.errors[0].startswith("corrupt PDF:")
