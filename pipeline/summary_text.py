"""The summary for people, as markdown: sections, sentences with numbered sources, and flags.

Each fact is cited once, by its first source: a note's quote and the DiagnosticReport that
carries the same note, or a result and its panel, are one fact (the FHIR Provenance keeps every
source). A line's numbers are written as runs ("3–9"), so a list of nine orders reads as one
citation, not nine.
"""

from __future__ import annotations

from pipeline.evidence import EvidenceState, SourceRef
from pipeline.rendering import render
from pipeline.summary import Summary

DRAFT_HEADING = "Discharge summary: AI DRAFT, needs physician review"


def source_label(ref: SourceRef) -> str:
    label = f"{ref.resource} · {ref.path}"
    if ref.quote is not None:
        label += f" · page {ref.page} [{ref.start}:{ref.end}] “{ref.quote}”"
    return label


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


def render_markdown(summary: Summary, state: EvidenceState, heading: str = DRAFT_HEADING) -> str:
    numbers: dict[str, list[str]] = {}
    labels: dict[str, int] = {}
    for sentence in summary.sentences():
        cited = []
        for fact_id in sentence.citations:
            first = next(iter(state.fact(fact_id).sources), None)
            if first is not None:
                cited.append(labels.setdefault(source_label(first), len(labels) + 1))
        numbers[sentence.id] = runs(sorted(set(cited)))
    sources = sorted((number, label) for label, number in labels.items())
    return render(
        "summary/summary.md.j2",
        title=heading,
        summary=summary,
        numbers=numbers,
        sources=sources,
    )
