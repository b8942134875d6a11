"""What chronic coronary disease on the problem list calls for at discharge, on hand-built
records: a statin for every patient, and an antithrombotic after an infarction or a
revascularization (2023 AHA/ACC chronic coronary disease guideline); the acute event's rules
ask instead where the episode holds one, and several old orders of one group are alternatives
to choose among, not each to continue."""

from __future__ import annotations

from typing import Any

from tests import fhir_fixtures as fx
from tests.pipeline.test_indicated_therapy import going_home, risks, state_of

ISCHAEMIC = fx.condition(
    "ihd", "Ischemic heart disease (disorder)", encounter_id=None, onset="2007-11-10"
)
BYPASS_LONG_AGO = fx.condition(
    "cabg",
    "History of coronary artery bypass grafting (situation)",
    encounter_id=None,
    onset="2012-05-01T12:00:00+00:00",
)


def coronary_lines(*resources: dict[str, Any]) -> list[str]:
    return [r for r in risks(state_of(*resources)) if "problem list" in r]


def test_ischaemic_heart_disease_with_no_statin_asks_for_one_and_a_statin_answers() -> None:
    assert coronary_lines(ISCHAEMIC, going_home("a", "amlodipine 5 MG Oral Tablet")) == [
        "No statin at discharge with chronic coronary disease on the problem list (Ischemic "
        "heart disease): confirm it was considered, or why it is not given"
    ]
    assert coronary_lines(ISCHAEMIC, going_home("s", "atorvastatin 40 MG Oral Tablet")) == []


def test_an_antithrombotic_is_asked_after_a_revascularization_and_an_anticoagulant_answers() -> (
    None
):
    """Ischaemic heart disease alone asks for no antiplatelet (its evidence is after an
    infarction or a revascularization); beyond the first year after one, an anticoagulant
    alone is the antithrombotic (AFIRE)."""
    statin = going_home("s", "atorvastatin 40 MG Oral Tablet")
    assert coronary_lines(BYPASS_LONG_AGO, statin) == [
        "No antiplatelet at discharge with a myocardial infarction or a coronary "
        "revascularization on the problem list (History of coronary artery bypass grafting): "
        "confirm it was considered, or why it is not given"
    ]
    apixaban = going_home("x", "apixaban 5 MG Oral Tablet")
    assert coronary_lines(BYPASS_LONG_AGO, statin, apixaban) == []


def test_old_orders_of_one_group_are_alternatives_to_choose_among() -> None:
    """Aspirin and clopidogrel of 2003, neither renewed: which continues is the question, not
    that each does (two antiplatelets for life is no secondary prevention)."""
    orders = [
        fx.old_order("a", "aspirin 81 MG Oral Tablet"),
        fx.old_order("c", "Clopidogrel 75 MG"),
    ]
    statin = going_home("s", "atorvastatin 40 MG Oral Tablet")
    assert coronary_lines(BYPASS_LONG_AGO, statin, *orders) == [
        "The only antiplatelet drugs with a myocardial infarction or a coronary "
        "revascularization on the problem list (History of coronary artery bypass grafting) are "
        "old orders to confirm: aspirin 81 MG Oral Tablet; Clopidogrel 75 MG: confirm which "
        "continues, or why none does"
    ]
    simvastatin = fx.old_order("v", "Simvastatin 20 MG Oral Tablet")
    assert coronary_lines(ISCHAEMIC, simvastatin) == [
        "The only statin with chronic coronary disease on the problem list (Ischemic heart "
        "disease) is an old order to confirm: Simvastatin 20 MG Oral Tablet: confirm that it "
        "continues, or why not"
    ]


def test_an_infarction_or_a_valve_replacement_of_the_episode_asks_instead() -> None:
    """The acute event's rule asks for aspirin and a statin (and a valve's for an
    antithrombotic) already; the list's coronary disease adds no second line for them."""
    infarction = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction")
    flagged = risks(state_of(ISCHAEMIC, BYPASS_LONG_AGO, infarction))
    assert not [r for r in flagged if "problem list" in r]
    assert any(r.startswith("No aspirin, no statin") for r in flagged), flagged
    valve = fx.procedure("avr", "Replacement of aortic valve (procedure)")
    statin = going_home("s", "atorvastatin 40 MG Oral Tablet")
    assert coronary_lines(BYPASS_LONG_AGO, valve, statin) == []


def test_a_statin_at_home_with_no_discharge_order_is_asked_to_continue_not_said_missing() -> None:
    """The admission note lists simvastatin and nothing orders it for discharge: "No statin at
    discharge" read as contradicting the note, so the line names the home drug and asks
    whether it continues."""
    listed = "# Medications\nsimvastatin 10 mg oral tablet\n"
    hp = fx.document_reference("hp", fx.attachment(listed))
    assert coronary_lines(ISCHAEMIC, hp) == [
        "The only statin with chronic coronary disease on the problem list (Ischemic heart "
        "disease) is a home drug with no discharge order: simvastatin 10 mg oral tablet (at "
        "home, held or stopped?): confirm that it continues, or why not"
    ]


def test_two_statins_at_home_are_alternatives_to_choose_between() -> None:
    """Two statins on the note's home list, neither ordered for discharge: which one continues
    is the question, as for old orders of one group, never that each does."""
    listed = "# Medications\nsimvastatin 10 mg oral tablet; atorvastatin 40 mg oral tablet\n"
    hp = fx.document_reference("hp", fx.attachment(listed))
    (line,) = coronary_lines(ISCHAEMIC, hp)
    assert line.startswith(
        "The only statin drugs with chronic coronary disease on the problem list (Ischemic heart "
        "disease) are home drugs with no discharge order: "
    )
    assert line.endswith(": confirm which continues, or why none does")
    assert "simvastatin 10 mg" in line and "atorvastatin 40 mg" in line
