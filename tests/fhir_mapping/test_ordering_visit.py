"""An old order to confirm says what the visit that wrote it was for, where that visit was for a
problem or a symptom and wrote it alone ("Vitamin B12 … (last ordered 2017-05-02, at a visit for
Anemia)"): a reader read a vitamin B12 order with no word of the anaemia visit behind it as
contradicting the draft's empty problem list. A check-up's reason, or a problem visit that wrote
several drugs at once, says nothing of what a drug is for (hand-written FHIR)."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.evidence.model import MedicationAttributes, attributes_as
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections

SNOMED = "http://snomed.info/sct"
PROBLEM_VISIT = "185347001"
CHECK_UP = "185349003"


def visit(kind: str, reason: str = "Anemia (disorder)") -> dict[str, Any]:
    """An office visit of 2017, of a SNOMED CT encounter type, for ``reason``."""
    when = "2017-05-02T09:00:00+00:00"
    return fx.encounter("visit", start=when, end=when, class_code="AMB") | {
        "type": [{"coding": [{"system": SNOMED, "code": kind}]}],
        "reasonCode": [{"text": reason}],
    }


def written_at_visit(request_id: str, name: str, **fields: Any) -> dict[str, Any]:
    return fx.medication_request(
        request_id,
        name,
        authored="2017-05-02T09:30:00+00:00",
        encounter_id="visit",
        dose="1 mL",
        frequency=(1, 30, "d"),
        route="intramuscular",
        **fields,
    )


B12 = "Vitamin B12 5 MG/ML Injectable Solution"


def drafted_line(*resources: dict[str, Any]) -> str:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    (line,) = [m for m in sections(state)["medications"] if B12 in m]
    return line


def test_an_order_a_problem_visit_wrote_alone_says_what_the_visit_was_for() -> None:
    line = drafted_line(visit(PROBLEM_VISIT), written_at_visit("b12", B12))
    assert f"{B12} (last ordered 2017-05-02, at a visit for Anemia)" in line


@pytest.mark.parametrize(
    "resources",
    [
        [visit(CHECK_UP, "Injury of tendon of the rotator cuff of shoulder (disorder)")],
        [visit(PROBLEM_VISIT), written_at_visit("iron", "ferrous sulfate 325 MG Oral Tablet")],
        [visit(PROBLEM_VISIT, "Patient referral (procedure)")],
    ],
    ids=["a check-up", "a visit that wrote two drugs", "a visit for no clinical reason"],
)
def test_a_visit_that_does_not_say_what_a_drug_is_for_is_not_named(
    resources: list[dict[str, Any]],
) -> None:
    line = drafted_line(*resources, written_at_visit("b12", B12))
    assert f"{B12} (last ordered 2017-05-02)" in line and "at a visit" not in line


def test_an_order_that_names_its_own_reason_keeps_it_and_not_the_visits() -> None:
    state = evidence_from_fhir(
        fx.stay(visit(PROBLEM_VISIT), written_at_visit("b12", B12, reason="Pernicious anemia")),
        settings=PipelineSettings(),
    )
    (order,) = state.facts["medication"]
    medication = attributes_as(order, MedicationAttributes)
    assert (medication.reason, medication.ordered_at_visit_for) == ("Pernicious anemia", None)
    (line,) = [m for m in sections(state)["medications"] if B12 in m]
    assert "at a visit for" not in line
