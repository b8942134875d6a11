"""A note page cut into the chunks a language model reads one call at a time: between
sentences, sized in the model's own tokens where its backend counts them (else characters), and
each chunk's answer schema bounded by what the chunk can state."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from pipeline.backends.answer_schemas import answer_budget, extraction_schema
from pipeline.backends.chat import ChatBackend, token_counter
from pipeline.settings import SchemaLimits
from pipeline.text.rendering import render
from pipeline.text.sentences import split_sentences

# A note page is read in chunks of about this size: in a model's tokens where the backend counts
# them (a chunk small enough for a small model to list its facts), else in characters.
CHUNK_TOKENS = 1000
MIN_CHUNK_TOKENS = 64
CHUNK_CHARS = 4000


def chunks(
    text: str, limit: int = CHUNK_CHARS, size: Callable[[str], int] = len
) -> list[tuple[int, int]]:
    """Spans of ``text`` of at most about ``limit`` (measured by ``size``: characters, or a
    model's tokens), cut between sentences; a sentence longer than the limit alone is cut between
    words."""
    spans: list[tuple[int, int]] = []
    start = end = 0
    held = 0
    for sentence in split_sentences(text):
        length = size(text[end : sentence.end])
        if held and held + length > limit:
            spans.append((start, end))
            start, held = end, 0
        held += length
        end = sentence.end
        if held > limit:
            spans += _cut_between_words(text, start, end, -(-held // limit))
            start, held = end, 0
    if spans and not text[start:].strip():
        spans[-1] = (spans[-1][0], len(text))  # trailing whitespace is no chunk of its own
    elif start < len(text):
        spans.append((start, len(text)))
    return spans


def _cut_between_words(text: str, start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """``text[start:end]`` in ``parts`` spans of about equal length, cut at whitespace."""
    cuts = [start]
    for part in range(1, parts):
        target = start + (end - start) * part // parts
        space = text.rfind(" ", cuts[-1] + 1, target)
        cuts.append(space + 1 if space >= 0 else target)
    cuts.append(end)
    return [(begin, stop) for begin, stop in pairwise(cuts) if stop > begin]


def chunk_measure(backend: ChatBackend, limits: SchemaLimits) -> tuple[int, Callable[[str], int]]:
    """How to size note chunks for this backend: in its own tokens where it counts them, at most
    ``CHUNK_TOKENS`` and no more than its window holds beside the prompt and the longest answer
    a chunk may get; in characters otherwise."""
    counter = token_counter(backend)
    if counter is None:
        return CHUNK_CHARS, len
    window, count = counter
    prompt = render("prompts/extract.txt.j2", title="", page=1, text="")
    overhead = count(render("prompts/system.txt.j2")) + count(prompt)
    answer = min(answer_budget(extraction_schema(limits)), window // 4)
    return max(MIN_CHUNK_TOKENS, min(CHUNK_TOKENS, window - overhead - answer)), count


def chunk_limits(limits: SchemaLimits, chunk: str) -> SchemaLimits:
    """The schema's bounds for one chunk: quotes no longer than the chunk, and at most two facts
    per sentence of it (a page of ten sentences cannot state 150 facts), so that each call's
    token budget is sized to its input."""
    sentences = max(1, len(split_sentences(chunk)))
    return limits.model_copy(
        update={
            "quote_chars": max(8, min(limits.quote_chars, len(chunk))),
            "item_chars": max(4, min(limits.item_chars, len(chunk))),
            "extraction_items": min(limits.extraction_items, 2 * sentences + 2),
        }
    )
