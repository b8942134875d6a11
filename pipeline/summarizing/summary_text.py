"""The summary for people, as markdown: sections, sentences with numbered sources, and flags.

Each fact is cited once, by its first source: a note's quote and the DiagnosticReport that
carries the same note, or a result and its panel, are one fact (the FHIR Provenance keeps every
source). Several results of one panel on one line are cited by the panel, once. A line's
numbers are written as runs ("3–9"), so a list of nine orders reads as one citation, not nine.

The Sources list is a reference, kept short: one line per kind of resource cited whole ("Condition
[4–6]: id, id, id") and one per note page quoted ("DocumentReference/id page 1 [7–9]: 33–47, …",
character spans; the quote itself is the sentence that cites it, so it is not written twice).
Sources are numbered line by line, so each line's numbers are one run and the n-th number of a
run is its n-th entry.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pipeline.evidence.model import EvidenceState, SourceRef
from pipeline.evidence.summary import Sentence, Summary
from pipeline.text.rendering import render

DRAFT_HEADING = "Discharge summary: AI DRAFT, needs physician review"

SourceKey = tuple[str, int | None, int | None, int | None]


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One line of the Sources list: what its entries are (a resource type, or one page of a
    note), the run of numbers they carry, and the entries in that order (ids, or spans)."""

    label: str
    numbers: str
    entries: list[str]


def source_key(ref: SourceRef) -> SourceKey:
    """What one citation number stands for: a resource, or one quoted span of it."""
    if ref.quote is None:
        return (ref.resource, None, None, None)
    return (ref.resource, ref.page, ref.start, ref.end)


def _line_of(key: SourceKey) -> str:
    resource, page, _, _ = key
    return resource.split("/")[0] if page is None else f"{resource} page {page}"


def _entry(key: SourceKey) -> str:
    resource, page, start, end = key
    return resource.partition("/")[2] if page is None else f"{start}–{end}"


def number_sources(cited: list[SourceKey]) -> tuple[dict[SourceKey, int], list[SourceLine]]:
    """Numbers for the sources in the order they are first cited, taken line by line (a line's
    entries in a row), and the Sources list those numbers read from."""
    lines: dict[str, list[SourceKey]] = {}
    for key in dict.fromkeys(cited):
        lines.setdefault(_line_of(key), []).append(key)
    numbered: dict[SourceKey, int] = {}
    listed = []
    for label, keys in lines.items():
        first = len(numbered) + 1
        numbered.update({key: first + offset for offset, key in enumerate(keys)})
        last = len(numbered)
        listed.append(
            SourceLine(
                label=label,
                numbers=", ".join(runs(list(range(first, last + 1)))),
                entries=[_entry(key) for key in keys],
            )
        )
    return numbered, listed


def runs(numbers: list[int]) -> list[str]:
    """Sorted numbers as runs: [1, 2, 3, 5] → ["1–3", "5"] (two in a row stay apart)."""
    written: list[str] = []
    start = 0
    for index, number in enumerate(numbers):
        if index + 1 < len(numbers) and numbers[index + 1] == number + 1:
            continue
        first = numbers[start]
        if number - first >= 2:
            written.append(f"{first}–{number}")
        else:
            written += [str(n) for n in numbers[start : index + 1]]
        start = index + 1
    return written


def line_sources(sentence: Sentence, state: EvidenceState) -> list[SourceKey]:
    """What one line cites: each fact by its first source, except that results of one panel
    named on the same line are cited by the panel (the DiagnosticReport), once."""
    facts = [state.fact(fact_id) for fact_id in sentence.citations]
    panels = Counter(
        ref.resource
        for fact in facts
        for ref in fact.sources[1:]
        if ref.quote is None and ref.resource.startswith("DiagnosticReport/")
    )
    keys = []
    for fact in facts:
        shared = [ref for ref in fact.sources[1:] if ref.quote is None and panels[ref.resource] > 1]
        cited = shared[0] if shared else next(iter(fact.sources), None)
        if cited is not None:
            keys.append(source_key(cited))
    return keys


def render_markdown(summary: Summary, state: EvidenceState, heading: str = DRAFT_HEADING) -> str:
    firsts = {sentence.id: line_sources(sentence, state) for sentence in summary.sentences()}
    numbered, sources = number_sources([key for keys in firsts.values() for key in keys])
    numbers = {
        sentence_id: runs(sorted({numbered[key] for key in keys}))
        for sentence_id, keys in firsts.items()
    }
    return render(
        "summary/summary.md.j2",
        title=heading,
        summary=summary,
        numbers=numbers,
        sources=sources,
    )
