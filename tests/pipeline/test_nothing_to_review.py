"""An empty Needs review says what it means: nothing flagged at all, or nothing beyond the lines
flagged on their own elsewhere in the draft (a treatment the record implies, on the principal
diagnosis's line), which it names by section, so that it never reads as the draft contradicting
itself (hand-built FHIR)."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.summary_text import render_markdown
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def drafted(*conditions: dict) -> Summary:
    return drafted_with_state(*conditions)[0]


def drafted_with_state(*conditions: dict) -> tuple[Summary, EvidenceState]:
    """A stay with every section documented, the conditions given its only diagnoses."""
    stay = fx.encounter() | {
        "reasonReference": [{"reference": "Condition/pn"}],
        "hospitalization": {"dischargeDisposition": {"text": "Discharged home"}},
    }
    amoxicillin = fx.ordered_in_stay(
        "amox", "amoxicillin 500 MG Capsule", dose="1 capsule", frequency=(3, 1, "d"), route="oral"
    )
    note = fx.document_reference(
        "note", fx.attachment("# Social History\nPatient has never smoked.\n")
    )
    record = fx.bundle(
        fx.patient(),
        stay,
        *conditions,
        fx.observation("o1", "Glucose", 98, "mg/dL"),
        fx.procedure("xr", "Chest X-ray (procedure)"),
        fx.allergy("a1", "Peanut"),
        fx.appointment("visit", "Clinic review"),
        amoxicillin,
        note,
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return summary, state


PNEUMONIA = fx.condition("pn", "Pneumonia (disorder)", code="233604007")


def test_a_draft_with_a_line_flagged_on_its_own_says_where_it_is() -> None:
    """An appendectomy the record implies (its "History of" recorded during the stay, no
    procedure) is flagged on its own line; Needs review, with nothing of its own, names that
    line's section instead of saying that no line is flagged."""
    implied = fx.condition("ha", "History of appendectomy (situation)", code="428251008")
    summary = drafted(PNEUMONIA, implied)
    flagged = [s.section for s in summary.sentences() if s.flagged]
    assert flagged == ["diagnoses"]
    review = summary.section("needs_review")
    assert review.sentences == []
    assert review.empty_reason == "Nothing beyond the line marked ⚠ below, in Discharge diagnoses."


def test_a_draft_with_every_section_documented_and_nothing_flagged_says_so() -> None:
    """Needs review over "Not documented" read as if the review itself were missing."""
    summary, state = drafted_with_state(PNEUMONIA)
    review = summary.section("needs_review")
    assert review.sentences == []
    assert review.empty_reason == "No line of this draft is flagged for review."
    assert "## Needs review\n\nNo line of this draft is flagged for review.\n" in render_markdown(
        summary, state
    )
