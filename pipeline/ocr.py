"""OCR of page images with the tesseract command-line program.

tesseract runs as a subprocess (Debian ``tesseract-ocr``) rather than through a binding, so the
only requirement is the program itself, and a missing program is a recorded fault, not a crash.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from dataclasses import dataclass

from pipeline.settings import PipelineSettings


class OcrUnavailableError(RuntimeError):
    """tesseract is not installed, or failed on this image; the page is flagged unread."""


@dataclass(frozen=True, slots=True)
class OcrResult:
    text: str
    confidence: float | None


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
    """Rebuild lines and paragraphs from tesseract's word table."""
    lines: list[str] = []
    confidences: list[float] = []
    current_key: tuple[str, str, str] | None = None
    current_block: str | None = None
    words: list[str] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        if row.get("level") != "5" or not word:
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        if key != current_key:
            if words:
                lines.append(" ".join(words))
            if current_block is not None and row["block_num"] != current_block:
                lines.append("")
            words, current_key, current_block = [], key, row["block_num"]
        words.append(word)
        confidence = float(row.get("conf") or -1)
        if confidence >= 0:
            confidences.append(confidence / 100.0)
    if words:
        lines.append(" ".join(words))
    mean = sum(confidences) / len(confidences) if confidences else None
    return OcrResult("\n".join(lines), mean)
