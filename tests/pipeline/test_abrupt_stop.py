"""Home drugs that harm when stopped abruptly (opioids, beta blockers, insulin…) and that no
discharge order carries: one Needs review line names each with its harm (hand-written FHIR)."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.conftest import needs_review_line

FULL: dict[str, object] = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def drafted(*resources: dict) -> EvidenceState:
    return evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())


def abrupt(state: EvidenceState) -> list[str]:
    return [f.reason for f in state.flags_for_review if "stopped abruptly" in f.reason]


def test_home_opioids_and_a_beta_blocker_with_no_discharge_order_are_named_with_their_harm() -> (
    None
):
    """Three opioids at home and metoprolol, none of them ordered at discharge: the list asks
    whether each is held or stopped, and this line says why silence is no answer; each group's
    drugs together, one line in all, supported by the orders it cites."""
    state = drafted(
        fx.medication_statement("oxy", "oxycodone hydrochloride 10 MG Oral Tablet"),
        fx.medication_statement("fen", "72 HR fentanyl 0.025 MG/HR Transdermal System"),
        fx.medication_statement("meto", "metoprolol tartrate 25 MG Oral Tablet"),
        fx.medication_statement("cal", "calcium carbonate 500 MG Oral Tablet"),
    )
    assert abrupt(state) == [
        "Home drugs that harm when stopped abruptly, with no discharge order: oxycodone "
        "hydrochloride 10 MG Oral Tablet; 72 HR fentanyl 0.025 MG/HR Transdermal System (each an "
        "opioid: withdrawal and uncontrolled pain); metoprolol tartrate 25 MG Oral Tablet (a "
        "beta blocker: rebound angina and infarction): continue each, or plan how it stops"
    ]
    line = needs_review_line(state, "abruptly")
    assert line.verdict == "supported", line.review_reasons()


def test_a_drug_ordered_at_discharge_or_one_that_is_safe_to_stop_asks_nothing() -> None:
    ordered = drafted(
        fx.medication_statement("meto", "metoprolol tartrate 25 MG Oral Tablet"),
        fx.ordered_in_stay("meto-d", "metoprolol tartrate 25 MG Oral Tablet", **FULL),
        fx.medication_statement("cal", "calcium carbonate 500 MG Oral Tablet"),
    )
    assert abrupt(ordered) == []


def test_an_opioid_after_an_admission_for_drug_abuse_is_no_withdrawal_to_prevent() -> None:
    """After withdrawal management the opioid's stop is the plan: the substance-use line asks
    about it, and "continue each, or plan how it stops" would read as advice to continue it. A
    beta blocker at home is asked about all the same."""
    abuse = fx.condition("sud", "Dependent drug abuse (disorder)")
    state = drafted(
        abuse,
        fx.medication_statement("tram", "tramadol hydrochloride 50 MG Oral Tablet"),
        fx.medication_statement("meto", "metoprolol tartrate 25 MG Oral Tablet"),
    )
    (line,) = abrupt(state)
    assert "metoprolol tartrate" in line and "tramadol" not in line
    assert any(
        f.code == "stop_proposed" and "tramadol hydrochloride 50 MG Oral Tablet" in f.reason
        for f in state.flags_for_review
    )
