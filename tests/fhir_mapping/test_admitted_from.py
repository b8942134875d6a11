"""Where the patient came in from: an emergency visit of the episode that ended before the
stay, or one that began by the stay's start and runs into it (a record opens the emergency visit
and the admission at the same minute), is the emergency department; one that began later in the
stay is not the way in (hand-written FHIR)."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def admitted_from(emergency_start: str, emergency_end: str) -> str | None:
    visit = fx.encounter("ed", emergency_start, emergency_end, "EMER")
    state = evidence_from_fhir(fx.stay(visit), settings=PipelineSettings())
    stay = state.stay()
    assert stay is not None
    return stay.admitted_from


def test_an_emergency_visit_opened_with_the_admission_is_the_way_in() -> None:
    assert admitted_from(fx.ADMIT, "2024-03-01T11:00:00+00:00") == "the emergency department"


def test_an_emergency_visit_that_ended_before_admission_is_the_way_in() -> None:
    ended = admitted_from("2024-03-01T06:00:00+00:00", "2024-03-01T08:00:00+00:00")
    assert ended == "the emergency department"


def test_an_emergency_visit_begun_later_in_the_stay_is_not() -> None:
    assert admitted_from("2024-03-03T06:00:00+00:00", "2024-03-03T08:00:00+00:00") is None
