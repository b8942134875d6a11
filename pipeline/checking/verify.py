"""Verification of a free-text summary against a free-text source (``provenote verify``)."""

from __future__ import annotations

from typing import Any

from pipeline.backends.claim_judge import default_judge
from pipeline.backends.retrieval import nearest
from pipeline.checking.checker import Evidence, VerificationReport, check_free_sentence, report_of
from pipeline.checking.entailment import NEAREST_SENTENCES, Judge, evidence_window, judged
from pipeline.text.sentences import split_sentences

RETRIEVED_SENTENCES = 3


def units(text: str) -> list[str]:
    return [span.text for span in split_sentences(text) if span.kind != "header"]


def verify_text(
    source: str,
    summary: str,
    encoder: Any | None = None,
    judge: Judge | None = None,
    *,
    meaning: bool = True,
) -> VerificationReport:
    """Check each summary sentence against the source sentences most similar to it and, with
    ``meaning``, by the claim verifier (``judge``, else the shipped one) against its window of
    the source."""
    source_units = units(source)
    summary_units = units(summary)
    whole = Evidence.of_text(source)
    neighbours = nearest(
        summary_units, source_units, max(RETRIEVED_SENTENCES, NEAREST_SENTENCES), encoder
    )
    meanings: list[Any] = [None] * len(summary_units)
    if meaning and summary_units:
        windows = [evidence_window(source_units, found) for found in neighbours]
        named = ["the source"] * len(windows)
        meanings = judged(judge or default_judge(), summary_units, windows, named)
    checks = [
        check_free_sentence(
            sentence,
            Evidence.of_text(*(source_units[i] for i in found[:RETRIEVED_SENTENCES])),
            whole,
            meaning=entailment,
        )
        for sentence, found, entailment in zip(summary_units, neighbours, meanings, strict=True)
    ]
    return report_of(summary_units, checks)
