"""A physician's review of a draft: accept, edit or delete one sentence at a time.

Pure functions over the Summary; the web layer stores what they return and who did it. A flag is
acknowledged by accepting the sentence as it stands, by an edit the fact checker supports, or by
deleting the sentence. An edit is checked again against the sentence's cited evidence (numbers,
dates, drugs, negation, demographics): one the checker does not support is flagged afresh and
must itself be accepted, so the physician may overrule the checker but never without seeing its
verdict. The model's grounding and entailment scores belonged to the old wording and are dropped.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import BaseModel

from pipeline.checking.checker import check_cited_sentence
from pipeline.errors import InputError
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence, Summary

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
    conflict, or the evidence flag's own name (its text empty where the sentence states it);
    each once, however many flags give it (seven orders without a dose are one reason)."""
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
    return list({(item.kind, item.reason): item for item in items}.values())


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


def preview_edit(summary: Summary, sentence_id: str, text: str, state: EvidenceState) -> Sentence:
    """The sentence as ``edit`` would store it, checked, without storing anything: the verdict
    the physician sees while typing."""
    return edit(summary, sentence_id, text, state)[1]


class DiffPart(BaseModel):
    change: Literal["same", "added", "removed"]
    text: str


def word_diff(before: str, after: str) -> list[DiffPart]:
    """``after`` against ``before`` word by word: what an edit changes, shown before it is
    saved."""
    old, new = before.split(), after.split()
    parts: list[DiffPart] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in {"delete", "replace"}:
            parts.append(DiffPart(change="removed", text=" ".join(old[i1:i2])))
        if tag in {"insert", "replace"}:
            parts.append(DiffPart(change="added", text=" ".join(new[j1:j2])))
        if tag == "equal":
            parts.append(DiffPart(change="same", text=" ".join(old[i1:i2])))
    return parts


class ReviewProgress(BaseModel):
    """How far the physician is: flags resolved of the flags the draft was written with (and
    any an edit raised), and which sentences those are, in the draft's order."""

    total: int
    resolved: int
    flagged: list[str]
    open: list[str]
    deleted: list[Sentence]


def review_progress(summary: Summary, drafted: dict[str, Sentence]) -> ReviewProgress:
    """The review's progress. ``drafted`` holds each reviewed sentence as it was drafted (the
    first edit's record of it), so an accepted, corrected or deleted flag still counts."""
    present = {sentence.id: sentence for sentence in summary.sentences()}
    flagged = [
        sentence.id
        for sentence in summary.sentences()
        if sentence.flagged or (sentence.id in drafted and drafted[sentence.id].flagged)
    ]
    deleted = [
        sentence
        for sentence_id, sentence in drafted.items()
        if sentence_id not in present and sentence.flagged
    ]
    open_ids = [sentence_id for sentence_id in flagged if present[sentence_id].awaiting_review]
    total = len(flagged) + len(deleted)
    return ReviewProgress(
        total=total,
        resolved=total - len(open_ids),
        flagged=flagged,
        open=open_ids,
        deleted=deleted,
    )
