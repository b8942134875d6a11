"""The evidence model: exact JSON round trips, stable ids, and spans that are whole or absent."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from launch.cli import DEFAULT_SAMPLE
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    MedicationAttributes,
    NarrativeAttributes,
    SourceRef,
    stable_id,
)
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir


@pytest.fixture(scope="module")
def sample_state() -> EvidenceState:
    return evidence_from_fhir(json.loads(DEFAULT_SAMPLE.read_bytes()), settings=PipelineSettings())


def test_state_round_trips_through_json_exactly(sample_state: EvidenceState) -> None:
    dumped = sample_state.model_dump_json()
    restored = EvidenceState.model_validate_json(dumped)
    assert restored == sample_state
    assert restored.model_dump_json() == dumped


def test_same_input_gives_the_same_fact_ids(sample_state: EvidenceState) -> None:
    again = evidence_from_fhir(json.loads(DEFAULT_SAMPLE.read_bytes()), settings=PipelineSettings())
    assert [fact.id for fact in again.all_facts()] == [fact.id for fact in sample_state.all_facts()]
    assert again.model_dump_json() == sample_state.model_dump_json()


def test_stable_id_depends_on_every_part() -> None:
    assert stable_id("x", "a", "b") == stable_id("x", "a", "b")
    assert stable_id("x", "a", "b") != stable_id("x", "ab")
    assert stable_id("x", "a", "b") != stable_id("x", "b", "a")


def test_text_source_needs_the_whole_span() -> None:
    with pytest.raises(ValidationError, match="together"):
        SourceRef(resource="DocumentReference/1", path="content[0]", document="d", quote="x")
    with pytest.raises(ValidationError, match="start < end"):
        SourceRef(
            resource="DocumentReference/1",
            path="content[0]",
            document="d",
            page=1,
            start=5,
            end=5,
            quote="",
        )


def test_fact_attributes_must_match_its_category() -> None:
    with pytest.raises(ValidationError, match="attributes are 'course'"):
        Fact(
            id="f",
            category="follow_up",
            attributes=NarrativeAttributes(category="course", text="x"),
        )


def test_medication_attributes_are_typed() -> None:
    with pytest.raises(ValidationError):
        MedicationAttributes(name="aspirin", status="active", phase="sometime", phase_rule="r")
