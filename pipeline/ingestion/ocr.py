"""OCR of page images with the tesseract command-line program.

tesseract runs as a subprocess (Debian ``tesseract-ocr``) rather than through a binding, so the
only requirement is the program itself, and a missing program is a recorded fault, not a crash.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pipeline.errors import ProvenoteError
from pipeline.evidence.model import WordBox
from pipeline.settings import PipelineSettings


class OcrUnavailableError(ProvenoteError, RuntimeError):
    """tesseract is not installed, or failed on this image; the page is flagged unread."""


@dataclass(frozen=True, slots=True)
class OcrResult:
    text: str
    confidence: float | None
    words: list[WordBox] = field(default_factory=list)


@dataclass(slots=True)
class OcrBudget:
    """OCR work left: pages and seconds, for one document inside one job. A scanned record can
    hold hundreds of pages; past the limits pages are reported skipped, never silently."""

    pages_left: int
    seconds_left: float
    document_pages: int
    document_seconds: float
    _document_pages_left: int = field(default=0)
    _document_seconds_left: float = field(default=0.0)

    @classmethod
    def for_job(cls, settings: PipelineSettings) -> OcrBudget:
        return cls(
            settings.ocr_max_pages_per_job,
            settings.ocr_max_seconds_per_job,
            settings.ocr_max_pages_per_document,
            settings.ocr_max_seconds_per_document,
        )

    def new_document(self) -> None:
        self._document_pages_left = self.document_pages
        self._document_seconds_left = self.document_seconds

    def refusal(self) -> str | None:
        """Why the next page may not be OCR'd, or None when it may."""
        if self.pages_left <= 0 or self.seconds_left <= 0:
            return "OCR skipped: the job's OCR limit was reached"
        if self._document_pages_left <= 0 or self._document_seconds_left <= 0:
            return "OCR skipped: the document's OCR limit was reached"
        return None

    @contextmanager
    def spend(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            elapsed = time.monotonic() - started
            self.pages_left -= 1
            self._document_pages_left -= 1
            self.seconds_left -= elapsed
            self._document_seconds_left -= elapsed


def tesseract_path(settings: PipelineSettings) -> str | None:
    return shutil.which(settings.tesseract_cmd)


def ocr_image(image: bytes, settings: PipelineSettings) -> OcrResult:
    """Text of one page image (PNG, JPEG or TIFF bytes) and the mean word confidence in [0, 1]."""
    program = tesseract_path(settings)
    if program is None:
        raise OcrUnavailableError(f"OCR unavailable: {settings.tesseract_cmd!r} is not installed")
    try:
        completed = subprocess.run(
            [program, "stdin", "stdout", "-l", settings.ocr_language, "--psm", "3", "tsv"],
            input=image,
            capture_output=True,
            timeout=settings.ocr_timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise OcrUnavailableError(f"OCR timed out after {settings.ocr_timeout_s:g} s") from error
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OcrUnavailableError(f"OCR failed: {message[-1] if message else 'tesseract error'}")
    return _from_tsv(completed.stdout.decode("utf-8", "replace"))


def _from_tsv(tsv: str) -> OcrResult:
    """Rebuild lines and paragraphs from tesseract's word table, keeping each word's box."""
    text = ""
    words: list[WordBox] = []
    confidences: list[float] = []
    width = height = 0.0
    current_key: tuple[str, str, str] | None = None
    current_block: str | None = None
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") == "1":  # the page: its size in pixels
            width, height = float(row["width"] or 0), float(row["height"] or 0)
        word = (row.get("text") or "").strip()
        if row.get("level") != "5" or not word:
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        if key != current_key and text:
            text += "\n\n" if row["block_num"] != current_block else "\n"
        elif text:
            text += " "
        current_key, current_block = key, row["block_num"]
        if width and height:
            words.append(
                WordBox(
                    start=len(text),
                    end=len(text) + len(word),
                    left=float(row["left"]) / width,
                    top=float(row["top"]) / height,
                    width=float(row["width"]) / width,
                    height=float(row["height"]) / height,
                )
            )
        text += word
        confidence = float(row.get("conf") or -1)
        if confidence >= 0:
            confidences.append(confidence / 100.0)
    mean = sum(confidences) / len(confidences) if confidences else None
    return OcrResult(text, mean, words)
