"""A deployment's own clinical tables (``tables_dir``) written before this round's keys still
draft: a regimen table with one renal list (``renal_review``) has its drugs' dose reviewed, a
diagnosis table without ``heart_failure`` leaves the principal line as it was, and a routine
table without ``recovery_keywords`` says no recovery; nothing fails (hand-written FHIR)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

SHIPPED = Path(__file__).parents[2] / "pipeline" / "clinical" / "tables"


def older_table(folder: Path, name: str, drop: list[str], add: dict[str, object]) -> None:
    """The shipped table ``name`` as a deployment kept it before this round: ``drop`` removed,
    ``add`` added."""
    table = json.loads((SHIPPED / f"{name}.json").read_text())
    for key in drop:
        del table[key]
    (folder / f"{name}.json").write_text(json.dumps(table | add))


def test_a_regimen_table_with_one_renal_list_keeps_the_dose_review(tmp_path: Path) -> None:
    older_table(
        tmp_path, "regimen_risks", ["renal_avoid", "renal_reduce"], {"renal_review": ["alendronic"]}
    )
    order = fx.medication_request(
        "a", "alendronic acid 70 MG Oral Tablet", encounter_id=fx.ENCOUNTER_ID
    )
    egfr = fx.observation("e", "eGFR", 13, "mL/min", loinc="33914-3", when=fx.IN_STAY)
    settings = PipelineSettings(tables_dir=tmp_path)
    state = evidence_from_fhir(fx.stay(order, egfr), settings=settings)
    reasons = [flag.reason for flag in state.flags_for_review]
    assert (
        "eGFR 13 mL/min on 2024-03-02: review the dose of alendronic acid 70 MG Oral Tablet for "
        "kidney function" in reasons
    )


def test_older_diagnosis_and_routine_tables_draft_as_before(tmp_path: Path) -> None:
    older_table(tmp_path, "diagnosis_specifics", ["heart_failure"], {})
    older_table(tmp_path, "routine_procedures", ["recovery_keywords"], {})
    failure = "Chronic congestive heart failure"
    coded = {"coding": [{"system": "http://snomed.info/sct", "code": "88805009"}], "text": failure}
    stay = fx.encounter() | {"reasonCode": [coded]}
    visit = fx.encounter("ed", fx.ADMIT, "2024-03-01T12:00:00+00:00", "EMER") | {
        "reasonCode": [coded]
    }
    diagnosis = fx.condition("hf", failure, code="88805009", encounter_id=None)
    care = fx.procedure("care", "Postoperative care", when="2024-03-02T12:00:00+00:00")
    operation = fx.procedure("op", "Coronary artery bypass graft", when=fx.IN_STAY)
    record = fx.bundle(fx.patient(), stay, visit, diagnosis, operation, care)
    settings = PipelineSettings(tables_dir=tmp_path)
    state = evidence_from_fhir(record, settings=settings)
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=settings)
    texts = [s.text for s in summary.sentences()]
    (principal, *_) = summary.section("diagnoses").sentences
    assert principal.text.startswith("Chronic congestive heart failure: principal diagnosis")
    assert "acute decompensation" not in principal.text  # the shipped table would say it
    assert "Procedures: Coronary artery bypass graft on 2024-03-02." in texts
