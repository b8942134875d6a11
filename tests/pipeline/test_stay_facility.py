"""What kind of place the stay was in, and what says so: the encounter's class, type or reason;
a location's name that alone calls it a skilled nursing unit is named on the stay's line, never
read as the kind of stay."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def stay_line(**encounter: Any) -> str:
    stay = fx.encounter() | encounter
    state = evidence_from_fhir(fx.bundle(fx.patient(), stay), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s.text for s in summary.section("stay").sentences if " from 2024-03-01" in s.text]
    return line


def at(place: str) -> list[dict[str, Any]]:
    return [{"location": {"display": place}}]


def test_a_skilled_nursing_unit_named_only_by_its_location_is_named_not_read_as_the_stay() -> None:
    """Readers of three rounds read an inpatient (IMP) stay called a nursing stay from its
    unit's name as a wrong label, with the name shown or not: the codes say an inpatient stay,
    and the line says so, with the unit's name."""
    line = stay_line(location=at("CALIF HOSP MED CTR L.A. DP SNF"))
    assert line.startswith(
        "Inpatient stay (IMP; location: CALIF HOSP MED CTR L.A. DP SNF) from 2024-03-01"
    )


def test_a_stay_its_type_calls_nursing_needs_no_location_and_a_hospital_none() -> None:
    typed = stay_line(
        type=[{"text": "Admission to skilled nursing facility"}], location=at("General ward")
    )
    assert typed.startswith("Skilled nursing stay (IMP) from 2024-03-01")
    assert stay_line(location=at("General ward")).startswith("Inpatient stay (IMP) from 2024-03-01")
