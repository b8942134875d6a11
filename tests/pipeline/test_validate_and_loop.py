"""Validation and the bounded agent loop, on states built from plain objects (no FHIR)."""

from __future__ import annotations

from pipeline.clinical.agent import run_agent_loop
from pipeline.clinical.validate import REQUIRED_CATEGORIES
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    NarrativeAttributes,
    Page,
    SourceDocument,
    SourceRef,
    group_facts,
)

TEXT = "Admitted with pneumonia. Treated with ceftriaxone."
DOCUMENT = SourceDocument(
    id="doc-1",
    sources=[SourceRef(resource="DocumentReference/1", path="content[0].attachment")],
    content_type="text/plain",
    pages=[Page(number=1, text=TEXT, has_text=True)],
)


def course(fact_id: str, start: int, end: int, quote: str) -> Fact:
    return Fact(
        id=fact_id,
        category="course",
        attributes=NarrativeAttributes(category="course", text=quote),
        sources=[
            SourceRef(
                resource="DocumentReference/1",
                path="content[0].attachment",
                document="doc-1",
                page=1,
                start=start,
                end=end,
                quote=quote,
            )
        ],
    )


def state_with(*facts: Fact, documents: list[SourceDocument] | None = None) -> EvidenceState:
    return EvidenceState(
        patient="Patient/1",
        documents=[DOCUMENT] if documents is None else documents,
        facts=group_facts(list(facts)),
    )


def test_quoted_fact_at_its_offsets_is_kept() -> None:
    state = run_agent_loop(state_with(course("ok", 0, 24, "Admitted with pneumonia.")), 12)
    assert [fact.id for fact in state.facts["course"]] == ["ok"]
    assert state.rejected_facts == []
    assert state.step_count == 3


def test_fact_without_provenance_is_rejected_and_flagged() -> None:
    orphan = Fact(
        id="orphan", category="course", attributes=NarrativeAttributes(category="course", text="x")
    )
    state = run_agent_loop(state_with(orphan), 12)
    assert state.facts["course"] == []
    assert [(r.fact.id, r.reason) for r in state.rejected_facts] == [
        ("orphan", "no provenance: the fact cites no source")
    ]
    assert [flag.code for flag in state.flags_for_review] == ["fact_rejected"]


def test_quote_not_at_its_offsets_is_rejected() -> None:
    wrong = course("wrong", 0, 24, "Admitted with influenza.")
    missing = course("missing", 0, 24, "Admitted with pneumonia.").model_copy(
        update={
            "sources": [
                course("m", 0, 24, "Admitted with pneumonia.")
                .sources[0]
                .model_copy(update={"document": "doc-404"})
            ]
        }
    )
    state = run_agent_loop(state_with(wrong, missing), 12)
    reasons = {rejected.fact.id: rejected.reason for rejected in state.rejected_facts}
    assert reasons["wrong"] == "quote not found at doc-1 page 1 [0:24]"
    assert reasons["missing"] == "quote source not found: doc-404"


def test_rejection_runs_another_pass_then_stops() -> None:
    state = run_agent_loop(state_with(course("wrong", 0, 5, "Nope!")), 12)
    assert [event.agent for event in state.trace] == [
        "reconcile",
        "detect_conflicts",
        "validate",
        "reconcile",
        "detect_conflicts",
        "validate",
    ]
    assert state.step_count == 6


def test_loop_stops_at_its_budget_and_flags_the_state() -> None:
    state = run_agent_loop(state_with(course("wrong", 0, 5, "Nope!")), 3)
    assert state.step_count == 3
    assert state.trace[-1].agent == "supervisor"
    assert "loop_budget_exhausted" in {flag.code for flag in state.flags_for_review}


def test_empty_categories_are_missing_fields() -> None:
    state = run_agent_loop(state_with(), 12)
    assert state.missing_fields == list(REQUIRED_CATEGORIES)


def test_unread_pages_and_document_errors_are_flagged() -> None:
    unread = DOCUMENT.model_copy(
        update={
            "id": "doc-2",
            "pages": [Page(number=1, text="", has_text=False, error="OCR unavailable")],
            "errors": ["page limit: read the first 1 of 3 pages"],
        }
    )
    state = run_agent_loop(state_with(documents=[DOCUMENT, unread]), 12)
    flags = sorted((flag.code, flag.reason) for flag in state.flags_for_review)
    assert flags == [
        ("document_error", "doc-2: page limit: read the first 1 of 3 pages"),
        ("page_unread", "doc-2 page 1 was not read: OCR unavailable"),
    ]


def test_running_the_loop_again_changes_nothing() -> None:
    first = run_agent_loop(state_with(course("ok", 0, 24, "Admitted with pneumonia.")), 12)
    second = run_agent_loop(first.model_copy(update={"step_count": 0, "trace": []}), 12)
    assert second.model_dump(exclude={"trace", "step_count"}) == first.model_dump(
        exclude={"trace", "step_count"}
    )
