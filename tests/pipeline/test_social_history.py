"""Social history: the coded social findings that bear on discharge planning and are current,
never as diagnoses."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import record, sections


def test_social_findings_are_social_history_not_diagnoses() -> None:
    """Social findings are never diagnoses; under Social history only those that bear on
    discharge planning (the AHC health-related social needs: housing, transport, safety…) are
    shown, never education or refugee status."""
    drafted = sections(evidence_from_fhir(record(), settings=PipelineSettings()))
    every_diagnosis = " ".join(drafted["diagnoses"] + drafted["active_problems"])
    assert "education" not in every_diagnosis and "Refugee" not in every_diagnosis
    assert drafted["social_history"] == []
    housing = fx.condition(
        "housing", "Housing unsatisfactory (finding)", code="105531004", encounter_id=None
    )
    drafted = sections(evidence_from_fhir(record(housing), settings=PipelineSettings()))
    assert drafted["social_history"] == ["Housing unsatisfactory (recorded 2024-03-01)."]


def test_a_social_finding_says_when_it_was_recorded_and_one_older_than_a_year_is_left_out() -> None:
    """A coded social finding stays active until someone records a change, which a record may
    never do: "Housing unsatisfactory" of 2006 says nothing of the housing the patient goes home
    to in 2024, and the AHC social-needs tool is repeated yearly. A finding of the year before
    admission says when it was recorded; an older one is left out, and so is the whole line
    when none is current."""
    old = {"encounter_id": None, "onset": "2006-06-29T10:00:00Z"}
    lately = {"encounter_id": None, "onset": "2023-04-02T10:00:00Z"}  # admission 2024-03-01
    housing = fx.condition("housing", "Housing unsatisfactory (finding)", code="105531004", **old)
    isolated = fx.condition("alone", "Social isolation (finding)", code="422650009", **lately)
    drafted = sections(evidence_from_fhir(record(housing, isolated), settings=PipelineSettings()))
    assert drafted["social_history"] == ["Social isolation (recorded 2023-04-02)."]
    drafted = sections(evidence_from_fhir(record(housing), settings=PipelineSettings()))
    assert not any("Housing" in line for line in drafted["social_history"])
