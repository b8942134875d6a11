"""Verification of a free-text summary against a free-text source (``provenote verify``)."""

from __future__ import annotations

from typing import Any

from pipeline.backends.retrieval import nearest
from pipeline.checking.checker import Evidence, VerificationReport, check_free_sentence, report_of
from pipeline.text.sentences import split_sentences

RETRIEVED_SENTENCES = 3


def units(text: str) -> list[str]:
    return [span.text for span in split_sentences(text) if span.kind != "header"]


def verify_text(source: str, summary: str, encoder: Any | None = None) -> VerificationReport:
    """Check each summary sentence against the source sentences most similar to it."""
    source_units = units(source)
    summary_units = units(summary)
    whole = Evidence.of_text(source)
    neighbours = nearest(summary_units, source_units, RETRIEVED_SENTENCES, encoder)
    checks = [
        check_free_sentence(sentence, Evidence.of_text(*(source_units[i] for i in found)), whole)
        for sentence, found in zip(summary_units, neighbours, strict=True)
    ]
    return report_of(summary_units, checks)
