"""A stay coded only as a transplant names no disease: the earlier record's visit reasons and
active care plans about the transplanted organ (the ``transplant_organs`` table) are offered on
the flagged principal-diagnosis line, each with its date and cited; never chosen, and never
anything about another organ."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

KIDNEY_WAIT = "Awaiting transplantation of kidney (situation)"


def visit(visit_id: str, start: str, reason: str) -> dict[str, Any]:
    """An ambulatory visit before the stay, for ``reason``."""
    return fx.encounter(visit_id, start=start, end=start, class_code="AMB") | {
        "reasonCode": [{"text": reason}]
    }


def record(reason: str, *resources: dict[str, Any]) -> dict[str, Any]:
    stay = fx.encounter() | {"reasonCode": [{"text": reason}]}
    return fx.bundle(fx.patient(), stay, *resources)


def first_diagnosis_line(reason: str, *resources: dict[str, Any]) -> Any:
    state = evidence_from_fhir(record(reason, *resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return state, summary.section("diagnoses").sentences[0]


def earlier_record() -> list[dict[str, Any]]:
    return [
        visit("v1", "2015-05-01T09:00:00+00:00", "Chronic kidney disease stage 4 (disorder)"),
        visit("v2", "2019-06-01T09:00:00+00:00", "Chronic kidney disease stage 4 (disorder)"),
        visit("v3", "2018-01-01T09:00:00+00:00", "Osteoarthritis of knee (disorder)"),
        fx.care_plan("dial", "Dialysis care plan", encounter_id="v1")
        | {"period": {"start": "2015-05-01T09:00:00+00:00"}},
        fx.care_plan("knee", "Physical therapy procedure", encounter_id="v3")
        | {"period": {"start": "2018-01-01T09:00:00+00:00"}},
        fx.care_plan("old", "Dialysis care plan (finished)", encounter_id="v1")
        | {"period": {"start": "2012-01-01T09:00:00+00:00"}, "status": "completed"},
    ]


def test_the_kidneys_earlier_record_is_offered_each_reason_once_at_its_latest_visit() -> None:
    state, line = first_diagnosis_line(KIDNEY_WAIT, *earlier_record())
    assert line.text == (
        "Principal diagnosis not documented: the stay is coded only as Awaiting transplantation "
        "of kidney; procedures of the episode: not documented; on the earlier record, about the "
        "organ before its transplant: Dialysis care plan (active since 2015-05-01); Chronic "
        "kidney disease stage 4 (reason for the visit of 2019-06-01)."
    )
    assert [flag.code for flag in line.flags] == ["principal_not_documented"]
    cited = {f.id for f in state.facts["organ_history"] if f.id in line.citations}
    assert len(cited) == 2


def test_a_history_of_a_renal_transplant_names_the_kidney_too() -> None:
    """The organ is read from the organ's words as well as its name: "renal" is the kidney."""
    _, line = first_diagnosis_line("History of renal transplant (situation)", *earlier_record())
    assert "Chronic kidney disease stage 4 (reason for the visit of 2019-06-01)" in line.text
    assert "Osteoarthritis" not in line.text and "Physical therapy" not in line.text


def test_a_problem_already_on_the_list_is_not_offered_twice() -> None:
    ckd = fx.condition(
        "ckd", "Chronic kidney disease stage 4 (disorder)", encounter_id=None, onset="2015-01-01"
    )
    _, line = first_diagnosis_line(KIDNEY_WAIT, ckd, *earlier_record())
    assert line.text.count("Chronic kidney disease stage 4") == 1
    assert line.text.startswith("Chronic kidney disease stage 4 (on the problem list since 2015")
    assert line.text == (
        "Chronic kidney disease stage 4 (on the problem list since 2015-01-01): no procedure of "
        "the episode documented. Before the transplant, on the earlier record: Dialysis care plan "
        "(active since 2015-05-01). The stay is coded only as Awaiting transplantation of kidney."
    )


def test_a_stay_coded_neither_as_a_transplant_nor_a_sterilization_maps_no_earlier_record() -> None:
    """(A sterilization reads the earlier visits for the contraception care it ends:
    test_therapy_after_drug_use_or_sterilization; the kidney's record never reaches its line.)"""
    state, _ = first_diagnosis_line("Acute bronchitis (disorder)", *earlier_record())
    assert state.facts["organ_history"] == []
    state, line = first_diagnosis_line("Sterilization requested (situation)", *earlier_record())
    assert state.facts["organ_history"] and "earlier record" not in line.text


def test_another_organs_transplant_offers_nothing_about_the_kidney() -> None:
    _, line = first_diagnosis_line(
        "Awaiting transplantation of liver (situation)", *earlier_record()
    )
    assert "earlier record" not in line.text


def test_the_pull_reads_every_encounter_for_a_transplant_stay() -> None:
    """The bounded pull reads the episode's encounters; a stay coded as a transplant needs the
    earlier visits too (as a sterilization does:
    test_therapy_after_drug_use_or_sterilization), whatever their age (the stay-bounded pull of
    a sandbox transplant stay yields the whole record's evidence:
    tests/smartapp/test_fhir_client.py)."""
    from fhir_mapping.pull_plan import Search, earlier_record_searches, stay_window

    transplant = {
        "reasonCode": [{"coding": [{"display": "Awaiting transplantation of kidney"}]}],
        "period": {"start": "2024-03-01T10:00:00+00:00", "end": "2024-03-05T10:00:00+00:00"},
    }
    window = stay_window(transplant, 48, 365)
    assert window is not None
    assert earlier_record_searches("p", transplant, window) == [
        Search("Encounter", {"patient": "Patient/p"})
    ]
    other = transplant | {"reasonCode": [{"text": "Heart failure"}]}
    assert earlier_record_searches("p", other, window) == []
