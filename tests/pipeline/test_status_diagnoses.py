"""A status or administrative term is never the diagnosis on its own: "History of X" of this
stay's own procedure, "History of X" beside the stay's disorder, a transfer coded as the reason
(hand-written FHIR)."""

from __future__ import annotations

from pipeline.evidence.model import DiagnosisAttributes, attributes_as
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections


def test_history_of_a_procedure_done_in_the_stay_is_the_procedure_said_once() -> None:
    """The issue's example: "History of coronary artery bypass grafting" quoted for a patient
    whose bypass was done during this stay. It is the bypass's coded after-state: the
    Procedures section names the bypass, and the principal diagnosis's line cites the status
    (a "Status post" line of its own read as the operation said twice)."""
    stay = fx.encounter() | {"reasonReference": [{"reference": "Condition/cad"}]}
    state = evidence_from_fhir(
        fx.bundle(
            fx.patient(),
            stay,
            fx.condition("cad", "Coronary arteriosclerosis (disorder)", code="53741008"),
            fx.procedure("cabg", "Coronary artery bypass grafting (procedure)"),
            fx.condition(
                "hx", "History of coronary artery bypass grafting (situation)", code="399261000"
            ),
            fx.condition(
                "appy", "History of appendectomy (situation)", code="161615003", onset="2006-08-03"
            ),
        ),
        settings=PipelineSettings(),
    )
    (status,) = [
        f for f in state.facts["diagnosis"] if attributes_as(f, DiagnosisAttributes).status_post
    ]
    drafted = sections(state)
    assert drafted["diagnoses"] == [
        "Coronary arteriosclerosis: principal diagnosis, the reason for the stay, onset "
        "2024-03-01, active."
    ]
    assert drafted["procedures"] == ["Coronary artery bypass grafting (completed) on 2024-03-01."]
    (principal,) = (
        summarize_evidence(state, settings=PipelineSettings()).section("diagnoses").sentences
    )
    assert status.id in principal.citations and not principal.flagged
    # No appendectomy in this episode: its history stays a history, on the past-history line.
    assert drafted["active_problems"] == ["Past history: appendectomy (recorded 2006-08-03)."]


def test_a_procedure_or_an_administrative_code_is_never_the_reason_for_the_stay() -> None:
    """ "Patient transfer to skilled nursing facility (procedure)" says what was arranged; the
    emergency visit of the same hour says why: a neck injury."""
    from pipeline.summarizing.evidence_summary import summarize_evidence

    emergency = fx.encounter(
        "ed", "2024-03-01T08:00:00+00:00", "2024-03-01T09:30:00+00:00", "EMER"
    ) | {"reasonCode": [{"text": "Injury of neck"}]}
    stay = fx.encounter() | {
        "reasonCode": [{"text": "Patient transfer to skilled nursing facility (procedure)"}]
    }
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, emergency),
        f"Encounter/{fx.ENCOUNTER_ID}",
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s.text for s in summary.section("stay").sentences]
    assert (
        "Reason for the stay: Injury of neck, the reason of the episode's emergency visit on "
        "2024-03-01." in lines
    )
    assert not any("transfer" in line for line in lines)
    (reason,) = [s for s in summary.section("stay").sentences if s.text.startswith("Reason")]
    assert reason.verdict == "supported"


def test_a_history_of_condition_is_never_the_principal_diagnosis() -> None:
    """ "History of appendectomy (situation)" was listed first for an appendicitis admission."""
    history = fx.condition("history", "History of appendectomy (situation)", code="428251008")
    appendicitis = fx.condition("acute", "Acute appendicitis (disorder)", code="85189001")
    stay = fx.encounter() | {
        "reasonReference": [
            {"reference": "Condition/history"},
            {"reference": "Condition/acute"},
        ]
    }
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, history, appendicitis), settings=PipelineSettings()
    )
    listings = {
        f.attributes.display: f.attributes.listing
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes)
    }
    assert listings["Acute appendicitis (disorder)"] == "principal"
    assert listings["History of appendectomy (situation)"] == "episode"
