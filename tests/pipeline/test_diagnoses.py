"""Discharge diagnoses a physician would write: principal first, social findings apart, stale
acute events flagged (hand-written FHIR, the shipped tables, then every Synthea stay)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.clinical.tables import table
from pipeline.evidence.model import DiagnosisAttributes
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import synthea_bundles
from tests.pipeline.conftest import default_draft
from tests.pipeline.diagnoses_support import record, sections


def test_principal_first_then_the_episodes_own_then_active_problems_apart() -> None:
    drafted = sections(evidence_from_fhir(record(), settings=PipelineSettings()))
    assert drafted["diagnoses"] == [
        "Aortic valve stenosis: principal diagnosis, the reason for the stay, onset 2023-01-10, "
        "active.",
        "Aspiration pneumonia: diagnosis of this stay, onset 2024-03-03, active.",
    ]
    assert drafted["active_problems"] == [
        "Active at discharge: Essential hypertension, since 2010-05-01.",
        "Active at discharge: Anemia, since 2020-01-01.",  # SNOMED's semantic tag is not shown
    ]


def test_older_entries_of_the_problem_list_share_one_line_and_chronic_conditions_keep_theirs() -> (
    None
):
    """Eighteen problems a line each hid the few that shape the plan. An active problem recorded
    more than a year before admission that is none of the CMS Chronic Conditions Warehouse's
    conditions (a chronic sinusitis of 1961, impacted molars of 1990) shares one dated line; a
    chronic condition of any age (hypertension of 2010, anaemia) and a problem of the last year
    keep their own; an obstetric past history goes to the past-history line."""
    more = {"encounter_id": None}
    drafted = sections(
        evidence_from_fhir(
            record(
                fx.condition("sinus", "Chronic sinusitis (disorder)", onset="1961-12-01", **more),
                fx.condition("molars", "Impacted molars (disorder)", onset="1990-09-08", **more),
                fx.condition("gout", "Gout (disorder)", onset="2023-07-29", **more),
                fx.condition(
                    "miscarriage",
                    "Past pregnancy history of miscarriage (situation)",
                    onset="1974-10-14",
                    **more,
                ),
            ),
            settings=PipelineSettings(),
        )
    )
    assert drafted["active_problems"] == [
        "Active at discharge: Essential hypertension, since 2010-05-01.",
        "Active at discharge: Anemia, since 2020-01-01.",
        "Active at discharge: Gout, since 2023-07-29.",
        "Also active on the problem list, recorded more than a year before this stay: Chronic "
        "sinusitis (since 1961-12-01); Impacted molars (since 1990-09-08).",
        "Past history: miscarriage (recorded 1974-10-14).",
    ]


def test_an_acute_event_recorded_active_for_decades_beside_an_unrelated_stay_is_left_out() -> None:
    """A 1973 "active" sepsis beside an aortic valve stay: not a diagnosis, and not a question."""
    state = evidence_from_fhir(record(), settings=PipelineSettings())
    assert not [f for f in state.flags_for_review if f.code == "stale_condition"]
    drafted = sections(state)
    everything = drafted["diagnoses"] + drafted["active_problems"] + drafted["needs_review"]
    assert not any("Sepsis" in text for text in everything)


def sepsis_stay(*old: dict) -> dict:
    stay = fx.encounter() | {"reasonReference": [{"reference": "Condition/now"}]}
    now = fx.condition(
        "now", "Sepsis caused by Escherichia coli (disorder)", code="1090711000119102"
    )
    return fx.bundle(fx.patient(), stay, now, *old)


def test_a_stale_acute_event_beside_a_related_stay_is_a_data_quality_flag() -> None:
    old = fx.condition(
        "sepsis", "Sepsis (disorder)", code="91302008", encounter_id=None, onset="1973-06-01"
    )
    state = evidence_from_fhir(sepsis_stay(old), settings=PipelineSettings())
    (flag,) = [f for f in state.flags_for_review if f.code == "stale_condition"]
    assert flag.reason == (
        "Sepsis recorded active since 1973-06-01, an acute event: confirm it is current"
    )
    drafted = sections(state)
    assert not any("Sepsis recorded" in text for text in drafted["diagnoses"])
    assert any("Sepsis recorded active since 1973" in t for t in drafted["needs_review"])


def test_a_stale_acute_event_that_is_abated_is_not_flagged() -> None:
    old = fx.condition(
        "sepsis",
        "Sepsis (disorder)",
        code="91302008",
        encounter_id=None,
        onset="1973-06-01",
        abatement="1973-07-01",
    )
    state = evidence_from_fhir(sepsis_stay(old), settings=PipelineSettings())
    assert not [f for f in state.flags_for_review if f.code == "stale_condition"]


def test_the_principal_can_come_from_reason_codes_or_the_encounters_diagnosis_role() -> None:
    by_code = fx.encounter() | {
        "reasonCode": [{"coding": [{"system": "http://snomed.info/sct", "code": "271737000"}]}]
    }
    by_role = fx.encounter() | {
        "diagnosis": [
            {
                "condition": {"reference": "Condition/anemia"},
                "use": {"coding": [{"code": "DD"}]},
            }
        ]
    }
    for stay in (by_code, by_role):
        data = record()
        data["entry"][1]["resource"] = stay
        listings = {
            f.attributes.display: f.attributes.listing
            for f in evidence_from_fhir(data, settings=PipelineSettings()).facts["diagnosis"]
        }
        assert listings["Anemia (disorder)"] == "principal"
        assert listings["Aortic valve stenosis"] == "active"


def test_the_tables_carry_their_source_and_a_deployment_can_replace_them(tmp_path: Path) -> None:
    shipped = table("social_findings", PipelineSettings())
    assert shipped.source and shipped.date == "2026-12-06" and "224299000" in shipped.codes
    (tmp_path / "social_findings.json").write_text(
        json.dumps({"source": "local", "date": "2026-12-01", "codes": {"271737000": "Anemia"}})
    )
    settings = PipelineSettings(tables_dir=tmp_path)
    listings = {
        f.attributes.display: f.attributes.listing
        for f in evidence_from_fhir(record(), settings=settings).facts["diagnosis"]
    }
    assert listings["Anemia (disorder)"] == "social"
    assert listings["Received higher education (finding)"] == "episode"  # not in the override


SOCIAL = table("social_findings", PipelineSettings())


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_synthea_diagnoses_hold_no_social_finding_and_no_stale_acute_event(path: Path) -> None:
    state, drafted = default_draft(path)
    listed = {
        citation
        for section in drafted.sections
        if section.key in {"diagnoses", "active_problems"}
        for sentence in section.sentences
        for citation in sentence.citations
    }
    for fact in state.facts["diagnosis"]:
        diagnosis = fact.attributes
        assert isinstance(diagnosis, DiagnosisAttributes)
        code = diagnosis.code.code if diagnosis.code else None
        if SOCIAL.matches(code, diagnosis.display) or diagnosis.listing == "stale":
            assert fact.id not in listed, diagnosis.display
    diagnoses = next(s for s in drafted.sections if s.key == "diagnoses")
    principal = [f for f in state.facts["diagnosis"] if f.attributes.listing == "principal"]
    if principal:  # the stay's reason heads the list
        assert diagnoses.sentences[0].citations[0] in {f.id for f in principal}


def test_a_problem_a_later_one_supersedes_is_no_active_problem() -> None:
    """Prediabetes beside type 2 diabetes begun later, and kidney disease stage 1 beside stage
    2: the earlier is superseded (ADA; KDIGO's one stage at a time) and not listed as active;
    a stage 2 begun before the stage 1 was recorded supersedes nothing."""

    def problem(key: str, name: str, onset: str) -> dict:
        return fx.condition(key, name, encounter_id=None, onset=onset)

    drafted = sections(
        evidence_from_fhir(
            record(
                problem("pre", "Prediabetes (finding)", "2001-01-01"),
                problem("dm", "Diabetes mellitus type 2 (disorder)", "2010-01-01"),
                problem("ckd1", "Chronic kidney disease stage 1 (disorder)", "2012-01-01"),
                problem("ckd2", "Chronic kidney disease stage 2 (disorder)", "2018-01-01"),
            ),
            settings=PipelineSettings(),
        )
    )
    listed = " ".join(drafted["active_problems"])
    assert "Diabetes mellitus type 2" in listed and "Chronic kidney disease stage 2" in listed
    assert "Prediabetes" not in listed and "stage 1" not in listed
    earlier_stage_two = sections(
        evidence_from_fhir(
            record(
                problem("ckd2", "Chronic kidney disease stage 2 (disorder)", "2005-01-01"),
                problem("ckd1", "Chronic kidney disease stage 1 (disorder)", "2012-01-01"),
            ),
            settings=PipelineSettings(),
        )
    )
    assert "Chronic kidney disease stage 1" in " ".join(earlier_stage_two["active_problems"])


def test_past_history_shares_one_line_after_the_problems_under_care() -> None:
    """SNOMED CT's "History of X" situations record past events: one line at the end of the
    list, never a line each among the problems under care; a resolved one keeps its own line,
    which says when it ended, and the clinical rules still read them all."""
    state = evidence_from_fhir(
        fx.bundle(
            fx.patient(),
            fx.encounter(),
            *(
                fx.condition(key, display, code=code, onset=onset, encounter_id=None)
                for key, display, code, onset in (
                    ("htn", "Essential hypertension (disorder)", "59621000", "2010-01-01"),
                    ("appy", "History of appendectomy (situation)", "428251008", "1987-07-25"),
                    (
                        "mi",
                        "History of myocardial infarction (situation)",
                        "399211009",
                        "2003-07-19",
                    ),
                )
            ),
            fx.condition(
                "sz",
                "History of seizure (situation)",
                code="308698004",
                onset="1990-01-01",
                abatement="2024-03-02T00:00:00+00:00",
                clinical="resolved",
                encounter_id=None,
            ),
        ),
        settings=PipelineSettings(),
    )
    problems = sections(state)["active_problems"]
    assert "Active at discharge: Essential hypertension, since 2010-01-01." in problems
    assert "Resolved 2024-03-02: History of seizure, since 1990-01-01." in problems
    assert problems[-1] == (
        "Past history: appendectomy (recorded 1987-07-25); myocardial infarction (recorded "
        "2003-07-19)."
    )
    listings = {f.attributes.display: f.attributes.listing for f in state.facts["diagnosis"]}
    assert listings["History of myocardial infarction (situation)"] == "active"


def _diagnosed(*found: tuple[str, str, str]) -> list[str]:
    """The diagnoses of a stay coded for "Sleep disorder" (a condition of the sleep study three
    weeks before), with ``found``'s conditions (id, display, onset) recorded too."""
    stay = fx.encounter() | {"reasonReference": [{"reference": "Condition/reason"}]}
    conditions = [
        fx.condition(key, display, code=code, onset=onset, encounter_id=None)
        for key, display, onset, code in (
            ("reason", "Sleep disorder (disorder)", "2024-02-09", "39898005"),
            *((key, display, onset, "78275009") for key, display, onset in found),
        )
    ]
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, *conditions), settings=PipelineSettings()
    )
    return sections(state)["diagnoses"]


def test_a_diagnosis_made_in_the_stay_that_specifies_the_coded_reason_is_the_principal() -> None:
    """UHDDS: the principal diagnosis is the condition established after study. Obstructive
    sleep apnoea found in a stay coded "Sleep disorder" names every topic word of the reason and
    more: it is the principal diagnosis, saying the reason it specifies, which is not listed
    again (two readers asked for it). Found before the stay, or with a second candidate, the
    coded reason stays: the record does not say which."""
    apnoea = ("osa", "Obstructive sleep apnea syndrome (disorder)", "2024-03-01T12:00:00+00:00")
    assert _diagnosed(apnoea) == [
        "Obstructive sleep apnea syndrome: principal diagnosis, established in this stay (the "
        "stay's coded reason: Sleep disorder), onset 2024-03-01, active."
    ]
    before = ("osa", "Obstructive sleep apnea syndrome (disorder)", "2024-02-20T12:00:00+00:00")
    assert _diagnosed(before)[0].startswith("Sleep disorder: principal diagnosis, the reason")
    insomnia = ("ins", "Sleep initiation disorder (disorder)", "2024-03-01T12:00:00+00:00")
    assert _diagnosed(apnoea, insomnia)[0].startswith("Sleep disorder: principal diagnosis")
