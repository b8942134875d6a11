"""A condition on the record that limits self-care at home asks the discharge who manages the
medicines and what support the patient and the carer have (42 CFR 482.43(a): the capacity for
self-care; AAN dementia measures: caregiver education and support), whatever review is
arranged. Two readers of a kidney recipient with Alzheimer's disease asked who would manage a
complex new regimen."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.tables import table
from pipeline.settings import PipelineSettings
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections
from tests.pipeline.test_indicated_therapy import state_of

ASKED = (
    "Care at home with Alzheimer's disease on record: say who manages the medicines at home, "
    "and what support the patient and the carer have."
)


def follow_up(*resources: dict[str, Any]) -> list[str]:
    return sections(state_of(*resources)).get("follow_up", [])


def alzheimer(**changes: Any) -> dict[str, Any]:
    """Alzheimer's disease on the problem list since 2015, years before the stay."""
    since: dict[str, Any] = {"encounter_id": None, "onset": "2015-12-22T10:00:00+00:00"}
    return fx.condition("ad", "Alzheimer's disease (disorder)", code="26929004", **since | changes)


def test_dementia_on_the_problem_list_asks_who_manages_the_medicines() -> None:
    assert ASKED in follow_up(alzheimer())


def test_an_appointment_arranged_does_not_answer_it() -> None:
    booked = fx.appointment("visit", "Memory clinic", end="2024-03-19T09:30:00+00:00")
    assert ASKED in follow_up(alzheimer(), booked)


def test_no_such_condition_or_a_resolved_one_asks_nothing() -> None:
    resolved = alzheimer(clinical="resolved", abatement="2016-01-01")
    assert not [line for line in follow_up(resolved) if line.startswith("Care at home")]
    assert not [line for line in follow_up() if line.startswith("Care at home")]


def test_the_table_says_where_its_self_care_rules_come_from() -> None:
    reviews = table("condition_follow_up", PipelineSettings())
    assert "482.43(a)" in reviews.source and reviews.extra["self_care"]["dementia"]["ask"]
