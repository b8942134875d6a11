"""Every Synthea bundle in ../shared/data: nothing unaccounted for, every quote where it says."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from pipeline.clinical.validate import quote_problem
from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests.conftest import synthea_bundles

pytestmark = pytest.mark.shared_data

ACCOUNTED_TYPES = (
    "MedicationRequest",
    "Condition",
    "AllergyIntolerance",
    "Procedure",
    "DiagnosticReport",
    "DocumentReference",
)
BUNDLES = synthea_bundles()


@cache
def evidence_of(path: Path) -> tuple[dict, EvidenceState]:
    data = json.loads(path.read_bytes())
    return data, evidence_from_fhir(data, settings=PipelineSettings())


def test_all_fifteen_bundles_are_here() -> None:
    assert len(BUNDLES) == 15


@pytest.mark.parametrize("path", BUNDLES, ids=lambda path: path.name[:8])
def test_every_clinical_resource_is_a_fact_or_a_traced_exclusion(path: Path) -> None:
    data, state = evidence_of(path)
    cited = {ref.resource for fact in state.all_facts() for ref in fact.sources}
    cited |= {ref.resource for document in state.documents for ref in document.sources}
    excluded = {exclusion.resource for exclusion in state.exclusions}
    traced = {event.resource for event in state.trace if event.action.startswith("excluded:")}
    assert excluded <= traced
    expected = {
        f"{entry['resource']['resourceType']}/{entry['resource']['id']}"
        for entry in data["entry"]
        if entry["resource"]["resourceType"] in ACCOUNTED_TYPES
    }
    unaccounted = expected - cited - excluded
    assert not unaccounted, sorted(unaccounted)[:5]
    assert all(exclusion.reason for exclusion in state.exclusions)


@pytest.mark.parametrize("path", BUNDLES, ids=lambda path: path.name[:8])
def test_every_quote_is_found_verbatim_at_its_offsets(path: Path) -> None:
    _, state = evidence_of(path)
    text_refs = [ref for fact in state.all_facts() for ref in fact.sources if ref.is_text]
    assert text_refs, "notes of every stay yield quoted statements"
    for ref in text_refs:
        assert quote_problem(state, ref) is None
        page = state.document(ref.document).page(ref.page)
        assert page.text[ref.start : ref.end] == ref.quote


@pytest.mark.parametrize("path", BUNDLES, ids=lambda path: path.name[:8])
def test_note_presented_twice_is_one_document_citing_both(path: Path) -> None:
    _, state = evidence_of(path)
    assert state.documents
    for document in state.documents:
        kinds = sorted(ref.resource.split("/")[0] for ref in document.sources)
        assert kinds == ["DiagnosticReport", "DocumentReference"]


@pytest.mark.parametrize("path", BUNDLES, ids=lambda path: path.name[:8])
def test_state_validates_and_round_trips(path: Path) -> None:
    _, state = evidence_of(path)
    assert state.rejected_facts == []
    assert [event.agent for event in state.trace if event.step > 0][:3] == [
        "reconcile",
        "detect_conflicts",
        "validate",
    ]
    assert all(fact.sources for fact in state.all_facts())
    assert EvidenceState.model_validate_json(state.model_dump_json()) == state


def test_prescriptions_ordered_after_the_stay_are_excluded_with_their_date() -> None:
    path = next(path for path in BUNDLES if path.name.startswith("0d4fcba9"))
    _, state = evidence_of(path)
    names = {fact.attributes.name for fact in state.facts["medication"]}
    assert "Hydrochlorothiazide 25 MG Oral Tablet" not in names
    later = [e for e in state.exclusions if e.reason.startswith("ordered 2022-07-11")]
    assert later and all(e.kind == "out_of_scope" for e in later)
