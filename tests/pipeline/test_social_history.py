"""Social history: the coded social findings that bear on discharge planning and are current,
never as diagnoses."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import record, sections

WEEK_BEFORE = "2024-02-23T09:00:00+00:00"  # admission 2024-03-01


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


def test_an_interpersonal_safety_finding_still_active_is_shown_whatever_its_age() -> None:
    """A victim of intimate partner abuse is asked about safety before going home: a 2006 finding
    the record still holds active is shown with its date, where a 2006 housing finding is left
    out as stale, and with the latest negative screen for it since (a HARK of 0 the week before
    admission), cited, where there is one. Once the record abates it, the year's window applies
    again."""
    old = {"encounter_id": None, "onset": "2006-06-29T10:00:00Z"}
    abuse = "Victim of intimate partner abuse (finding)"
    active = fx.condition("abuse", abuse, code="706893006", **old)
    housing = fx.condition("housing", "Housing unsatisfactory (finding)", code="105531004", **old)
    drafted = sections(evidence_from_fhir(record(active, housing), settings=PipelineSettings()))
    assert drafted["social_history"] == ["Victim of intimate partner abuse (recorded 2006-06-29)."]
    hark = fx.observation(
        "hark", "HARK total", 0, "{score}", loinc="76504-0", when=WEEK_BEFORE, category="survey"
    )
    del hark["encounter"], hark["referenceRange"]
    state = evidence_from_fhir(record(active, hark), settings=PipelineSettings())
    assert sections(state)["social_history"] == [
        "Victim of intimate partner abuse (recorded 2006-06-29; screened negative since: HARK 0 "
        "on 2024-02-23)."
    ]
    (line,) = (
        summarize_evidence(state, settings=PipelineSettings()).section("social_history").sentences
    )
    assert len(line.citations) == 2 and line.verdict == "supported"
    resolved = fx.condition(
        "abuse", abuse, code="706893006", clinical="resolved", abatement="2007-01-01", **old
    )
    drafted = sections(evidence_from_fhir(record(resolved), settings=PipelineSettings()))
    assert drafted["social_history"] == []
