"""A physician's review of a draft: accept, edit or delete one sentence at a time.

Pure functions over the Summary; the web layer stores what they return and who did it. A flag is
acknowledged by accepting the sentence as it stands, by an edit the fact checker supports, or by
deleting the sentence. An edit is checked again against the sentence's cited evidence (numbers,
dates, drugs, negation, demographics): one the checker does not support is flagged afresh and
must itself be accepted, so the physician may overrule the checker but never without seeing its
verdict. The model's grounding and entailment scores belonged to the old wording and are dropped.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from pipeline.checker import check_cited_sentence
from pipeline.errors import InputError
from pipeline.evidence import EvidenceState
from pipeline.summary import Sentence, Summary

ReviewAction = Literal["accept", "edit", "delete"]
REMOVED_AT_REVIEW = "Removed at physician review"
MAX_SENTENCE_CHARS = 2000


# What the page calls each kind of flag, so the physician sees why at a glance.
FLAG_KINDS = {
    "entailment": "Unsupported",
    "low_grounding": "Weak grounding",
    "conflict": "Conflict",
    "stale_condition": "Data quality",
}


class ReviewItem(BaseModel):
    kind: str
    reason: str


def review_items(sentence: Sentence) -> list[ReviewItem]:
    """Each reason the sentence is flagged, labelled: unsupported, weak grounding, failed check,
    conflict, or the evidence flag's own name (its text empty where the sentence states it)."""
    items = [
        ReviewItem(
            kind=FLAG_KINDS.get(flag.code, flag.code.replace("_", " ").capitalize()),
            reason="" if sentence.states(flag.reason) else flag.reason,
        )
        for flag in sentence.flags
    ]
    items += [
        ReviewItem(
            kind="Failed check" if check.severity == "hard" else "Weak grounding",
            reason=f"{check.check}: {check.detail}"
            + (f": {', '.join(check.spans)}" if check.spans else ""),
        )
        for check in sentence.checks
        if not check.passed
    ]
    return items


class ReviewError(InputError):
    """An action the review cannot take: unknown sentence, empty or oversized text."""


def find_sentence(summary: Summary, sentence_id: str) -> Sentence:
    for sentence in summary.sentences():
        if sentence.id == sentence_id:
            return sentence
    raise ReviewError(f"the draft has no sentence {sentence_id!r}")


def awaiting_review(summary: Summary) -> list[Sentence]:
    """Flagged sentences nobody has acknowledged yet; signing waits until there are none."""
    return [sentence for sentence in summary.sentences() if sentence.awaiting_review]


def _replace(summary: Summary, sentence_id: str, replacement: Sentence | None) -> Summary:
    sections = []
    for section in summary.sections:
        kept = [
            s if s.id != sentence_id else replacement
            for s in section.sentences
            if s.id != sentence_id or replacement is not None
        ]
        update: dict[str, object] = {"sentences": kept}
        if not kept and section.sentences:
            update["empty_reason"] = REMOVED_AT_REVIEW
        sections.append(section.model_copy(update=update))
    return summary.model_copy(update={"sections": sections})


def accept(summary: Summary, sentence_id: str) -> tuple[Summary, Sentence]:
    """The sentence accepted as written, its flags kept for the record."""
    accepted = find_sentence(summary, sentence_id).model_copy(update={"review": "accepted"})
    return _replace(summary, sentence_id, accepted), accepted


def edit(
    summary: Summary, sentence_id: str, text: str, state: EvidenceState
) -> tuple[Summary, Sentence]:
    """The sentence rewritten by the physician and checked again against its citations."""
    text = " ".join(text.split())
    if not text:
        raise ReviewError("an edited sentence cannot be empty; delete it instead")
    if len(text) > MAX_SENTENCE_CHARS:
        raise ReviewError(f"an edited sentence is limited to {MAX_SENTENCE_CHARS} characters")
    original = find_sentence(summary, sentence_id)
    edited = original.model_copy(
        update={
            "text": text,
            "checks": check_cited_sentence(text, original.citations, state),
            "flags": [],
            "grounding": None,
            "entailment": None,
            "revisions": [*original.revisions, original.text],
            "review": "edited",
        }
    )
    return _replace(summary, sentence_id, edited), edited


def delete(summary: Summary, sentence_id: str) -> tuple[Summary, Sentence]:
    """The summary without the sentence; a section left empty says it was removed at review."""
    removed = find_sentence(summary, sentence_id)
    return _replace(summary, sentence_id, None), removed
