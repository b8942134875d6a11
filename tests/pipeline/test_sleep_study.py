"""Sleep apnoea diagnosed in the episode asks for the sleep study it rests on: polysomnography
or a home sleep apnoea test diagnoses it and grades it by the apnoea-hypopnoea index (AASM
2017). Five readers of two sleep-apnoea drafts found no study and no index anywhere; the draft
says so first. A study of the episode answers it, and sleep apnoea only on the problem list,
from before the stay, asks nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests import fhir_fixtures as fx
from tests.pipeline.test_indicated_therapy import risks, state_of

STUDY_ASKED = (
    "Sleep apnoea diagnosed in this episode (Obstructive sleep apnea syndrome) with no sleep study "
    "(polysomnography or a home sleep apnoea test) recorded in this episode: the diagnosis and "
    "its severity (the apnoea-hypopnoea index) rest on it: add its result, or say where it is"
)


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        ([], True),
        ([fx.procedure("psg", "Polysomnography (procedure)")], False),
        ([fx.procedure("hsat", "Home sleep apnea test (procedure)")], False),
        ([fx.procedure("cpap", "Continuous positive airway pressure titration")], True),
    ],
    ids=["nothing recorded", "a polysomnography", "a home test", "a titration only"],
)
def test_sleep_apnoea_diagnosed_in_the_stay_asks_for_its_sleep_study(
    recorded: list[dict[str, Any]], asked: bool
) -> None:
    apnoea = fx.condition("osa", "Obstructive sleep apnea syndrome (disorder)", code="78275009")
    found = [r for r in risks(state_of(apnoea, *recorded)) if "sleep study" in r]
    assert found == [STUDY_ASKED] * asked


def test_sleep_apnoea_from_before_the_stay_asks_nothing() -> None:
    known = fx.condition(
        "osa",
        "Obstructive sleep apnea syndrome (disorder)",
        code="78275009",
        encounter_id=None,
        onset="2015-08-16T10:00:00+00:00",
    )
    assert not [r for r in risks(state_of(known)) if "sleep study" in r]


def analyzer(made: str) -> dict[str, Any]:
    return {
        "resourceType": "Device",
        "id": "psg-analyzer",
        "status": "active",
        "type": {"coding": [{"display": "Polysomnography analyzer (physical object)"}]},
        "manufactureDate": made,
        "patient": {"reference": f"Patient/{fx.PATIENT_ID}"},
    }


def test_the_study_equipment_recorded_weeks_before_says_the_study_was_done() -> None:
    """A polysomnography analyzer recorded two weeks before admission: the study was done and
    its result is what the record lacks (a reader read the line without it as saying no study
    was done); equipment of years before says nothing of this diagnosis."""
    apnoea = fx.condition("osa", "Obstructive sleep apnea syndrome (disorder)", code="78275009")
    (line,) = [r for r in risks(state_of(apnoea, analyzer("2024-02-15"))) if "sleep study" in r]
    assert line.startswith(
        "Sleep apnoea diagnosed in this episode (Obstructive sleep apnea syndrome) with the "
        "equipment of a sleep study (polysomnography or a home sleep apnoea test) recorded on "
        "2024-02-15 (Polysomnography analyzer) but no study or result in the record:"
    )
    old = [r for r in risks(state_of(apnoea, analyzer("2019-02-15"))) if "sleep study" in r]
    assert old == [STUDY_ASKED]
