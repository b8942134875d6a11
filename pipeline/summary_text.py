"""The summary for people, as markdown: sections, sentences with numbered sources, and flags."""

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


def render_markdown(summary: Summary, state: EvidenceState, heading: str = DRAFT_HEADING) -> str:
    numbers: dict[str, list[int]] = {}
    labels: dict[str, int] = {}
    for sentence in summary.sentences():
        cited = []
        for fact_id in sentence.citations:
            for ref in state.fact(fact_id).sources:
                label = source_label(ref)
                cited.append(labels.setdefault(label, len(labels) + 1))
        numbers[sentence.id] = sorted(set(cited))
    sources = sorted((number, label) for label, number in labels.items())
    return render(
        "summary/summary.md.j2",
        title=heading,
        summary=summary,
        numbers=numbers,
        sources=sources,
    )
