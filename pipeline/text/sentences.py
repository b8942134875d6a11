"""A sentence splitter for clinical text that keeps exact character offsets.

Every quote Provenote shows must be found again at its offsets, so a span's ``text`` is always
``source[start:end]``: nothing is normalised, only leading and trailing whitespace and list or
header markers are left outside the span.

Clinical notes break general-purpose splitters in known places. Here:
- a line is a unit boundary when it is blank, a header (``# Plan``, ``MEDICATIONS:``,
  ``HISTORY OF PRESENT ILLNESS``) or a list item (``- aspirin``, ``2) metoprolol``);
- a paragraph wrapped over several lines stays one unit (PDF text is wrapped mid-sentence);
- inside a unit, a sentence ends at ``.``, ``!`` or ``?`` followed by whitespace and a capital
  letter, digit or opening bracket, unless the word before is a title or Latin abbreviation
  ("Dr.", "Mrs.", "e.g.", "vs.") or a single initial; dosing abbreviations ("b.i.d.", "p.o.")
  end a sentence only when a capitalised word follows, so "5 mg b.i.d. with meals" stays whole;
- decimals ("0.5 mg", "38.5") never split because no whitespace follows their point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

SpanKind = Literal["header", "bullet", "sentence"]

_MARKDOWN_HEADER = re.compile(r"^[ \t]*(#{1,6})[ \t]+(?P<title>\S.*?)[ \t]*#*[ \t]*$")
_CAPS_HEADER = re.compile(r"^[ \t]*(?P<title>[A-Z][A-Z0-9 &/,()'-]{2,60}?)[ \t]*:?[ \t]*$")
_COLON_HEADER = re.compile(r"^[ \t]*(?P<title>[A-Z][A-Za-z0-9 &/,()'-]{2,60}?):[ \t]*$")
_BULLET = re.compile(r"^[ \t]*(?:[-*•◦▪‣]|\d{1,3}[.)])[ \t]+(?=\S)")
_TERMINATOR = re.compile(r"[.!?]+[\"')\]]*(?=\s)")
_NEXT_START = re.compile(r"\s+(?P<first>\S)")

# Words that end in a period without ending the sentence (compared lower-case, without the dot).
_NON_TERMINAL = frozenset(
    """
    dr mr mrs ms prof sr jr st vs e.g i.e approx fig no nos dept univ inc ltd mt ft
    """.split()
)
# Dosing abbreviations: they end a sentence only before a capitalised word.
_DOSING = frozenset(
    """
    b.i.d t.i.d q.i.d q.d q.o.d p.o p.r.n q.h.s h.s a.c p.c s.l i.v i.m
    """.split()
)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str
    kind: SpanKind


@dataclass(frozen=True, slots=True)
class Section:
    """A header and the text under it, up to the next header."""

    title: str
    level: int
    header_start: int
    start: int
    end: int


def _header_title(line: str) -> tuple[str, int] | None:
    match = _MARKDOWN_HEADER.match(line)
    if match:
        return match.group("title"), len(match.group(1))
    stripped = line.strip()
    if not stripped or len(stripped) > 64:
        return None
    match = _COLON_HEADER.match(line)
    if match:
        # "D1 :" is titled "D1": a span never ends in whitespace.
        return match.group("title").rstrip(), 1
    match = _CAPS_HEADER.match(line)
    if match and sum(ch.isalpha() for ch in match.group("title")) >= 4:
        return match.group("title").strip(), 1
    return None


def _lines(text: str) -> list[tuple[int, str]]:
    """Each line with its start offset, line breaks excluded."""
    out: list[tuple[int, str]] = []
    position = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        out.append((position, line))
        position += len(raw)
    return out


def _trimmed(text: str, start: int, end: int, kind: SpanKind) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        return None
    return Span(start, end, text[start:end], kind)


def _word_before(text: str, position: int) -> str:
    """The whitespace-delimited word ending at ``position`` (exclusive), trailing dots removed."""
    begin = position
    while begin > 0 and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:position].rstrip(".").lower()


def _ends_sentence(text: str, dot: int, after: int, unit_end: int) -> bool:
    """Whether the terminator at ``dot`` ends a sentence; ``after`` is just past its punctuation."""
    follow = _NEXT_START.match(text, after, unit_end)
    if follow is None:
        return False
    first = follow.group("first")
    if not (first.isupper() or first.isdigit() or first in "([\"'"):
        return False
    if text[dot] != ".":
        return True
    word = _word_before(text, dot + 1).lstrip("([\"'")
    if word in _NON_TERMINAL and not (word == "no" and not first.isdigit()):
        return False
    if len(word) == 1 and word.isalpha() and text[dot - 1].isupper():
        # An initial ("J. Smith"), unless it is a unit after a number ("38.5 C. Pulse 90").
        return any(ch.isdigit() for ch in _word_before(text, dot - 2))
    if word in _DOSING:
        return first.isupper()
    return True


def _split_unit(text: str, start: int, end: int, kind: SpanKind) -> list[Span]:
    spans: list[Span] = []
    sentence_start = start
    for match in _TERMINATOR.finditer(text, start, end):
        if _ends_sentence(text, match.start(), match.end(), end):
            span = _trimmed(text, sentence_start, match.end(), kind)
            if span:
                spans.append(span)
            sentence_start = match.end()
            kind = "sentence"
    span = _trimmed(text, sentence_start, end, kind)
    if span:
        spans.append(span)
    return spans


def split_sentences(text: str) -> list[Span]:
    """Headers, list items and sentences of ``text`` in order, each at its exact offsets."""
    spans: list[Span] = []
    unit: tuple[int, int, SpanKind] | None = None

    def flush() -> None:
        nonlocal unit
        if unit is not None:
            spans.extend(_split_unit(text, *unit))
            unit = None

    for offset, line in _lines(text):
        line_end = offset + len(line)
        if not line.strip():
            flush()
            continue
        header = _header_title(line)
        if header is not None:
            flush()
            title_start = offset + line.index(header[0])
            spans.append(Span(title_start, title_start + len(header[0]), header[0], "header"))
            continue
        bullet = _BULLET.match(line)
        if bullet is not None:
            flush()
            unit = (offset + bullet.end(), line_end, "bullet")
            continue
        unit = (offset, line_end, "sentence") if unit is None else (unit[0], line_end, unit[2])
    flush()
    return spans


def split_sections(text: str) -> list[Section]:
    """Sections of ``text`` by its headers; text before the first header is not a section."""
    headers: list[tuple[str, int, int, int]] = []
    for offset, line in _lines(text):
        header = _header_title(line)
        if header is not None:
            headers.append((header[0], header[1], offset, offset + len(line)))
    sections: list[Section] = []
    for index, (title, level, line_start, line_end) in enumerate(headers):
        next_start = headers[index + 1][2] if index + 1 < len(headers) else len(text)
        sections.append(
            Section(title, level, line_start, min(line_end + 1, next_start), next_start)
        )
    return sections


# A printed page's numbering ("2 | P a g e", "Page 2 of 3"): never a statement.
PAGE_MARK = re.compile(
    r"^(?:\W*(?:page\s*\d+(?:\s*of\s*\d+)?|\d+\s*\|?\s*p\s*a\s*g\s*e))+\W*$", re.IGNORECASE
)


def sentences_in(text: str, section: Section) -> list[Span]:
    """The statements of one section (not its header, not page numbers), offsets relative to
    the whole text."""
    body = text[section.start : section.end]
    return [
        Span(span.start + section.start, span.end + section.start, span.text, span.kind)
        for span in split_sentences(body)
        if span.kind != "header" and not PAGE_MARK.match(span.text)
    ]
