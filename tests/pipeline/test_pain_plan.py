"""When the list proposes to stop an analgesic of a patient with chronic pain on record, one
Needs review line asks how the pain is treated without it (CDC 2022 recommendations 2 and 5;
AHA 2007 statement on NSAIDs); the checker supports it."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.conftest import needs_review_line
from tests.pipeline.test_regimen_risks import going_home, risks

HEART = fx.condition("mi", "History of myocardial infarction (situation)", encounter_id=None)
KNEE = fx.condition("oa", "Osteoarthritis of knee (disorder)", encounter_id=None)
NAPROXEN = going_home("n", "Naproxen sodium 220 MG Oral Tablet")


def drafted(*resources: dict) -> EvidenceState:
    return evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())


def pain_plans(state: EvidenceState) -> list[str]:
    return [
        reason for reason in risks(state) if reason.startswith("A chronic pain condition on record")
    ]


def test_an_nsaid_proposed_stopped_with_chronic_pain_on_record_asks_for_a_pain_plan() -> None:
    state = drafted(HEART, KNEE, NAPROXEN)
    assert pain_plans(state) == [
        "A chronic pain condition on record (Osteoarthritis of knee) and its analgesics proposed "
        "stopped (Naproxen sodium 220 MG Oral Tablet): plan how the pain is treated without them"
    ]
    line = needs_review_line(state, "A chronic pain condition on record")
    assert line.verdict == "supported", line.review_reasons()


def test_no_pain_on_record_or_no_stop_proposed_asks_nothing() -> None:
    assert pain_plans(drafted(HEART, NAPROXEN)) == []
    # Without heart disease the NSAID's stop is not proposed: the pain keeps its drug.
    assert pain_plans(drafted(KNEE, NAPROXEN)) == []
    resolved = fx.condition(
        "oa", "Osteoarthritis of knee (disorder)", encounter_id=None, abatement="2020-01-01"
    )
    assert pain_plans(drafted(HEART, resolved, NAPROXEN)) == []
    # A drug of no analgesic class proposed stopped leaves no pain untreated.
    aspirin = going_home("a", "aspirin 81 MG Oral Tablet")
    assert pain_plans(drafted(HEART, KNEE, aspirin)) == []


def test_an_opioid_at_home_proposed_stopped_after_a_drug_use_admission_is_named() -> None:
    """An opioid at home with no discharge order, proposed stopped after an admission for
    substance use: the pain it treated is asked about, and only the drugs proposed stopped are
    named, not the other drugs of the same home list."""
    admission = fx.condition("d", "Dependent drug abuse (disorder)")
    pain = fx.condition("cp", "Chronic low back pain (finding)", encounter_id=None)
    home = fx.medication_statement("s", "tramadol hydrochloride 50 MG Oral Tablet")
    statin = fx.medication_statement("t", "simvastatin 20 MG Oral Tablet")
    assert pain_plans(drafted(admission, pain, home, statin)) == [
        "A chronic pain condition on record (Chronic low back pain) and its analgesics proposed "
        "stopped (tramadol hydrochloride 50 MG Oral Tablet): plan how the pain is treated without "
        "them"
    ]


def test_an_analgesic_that_remains_leaves_the_pain_treated() -> None:
    """An NSAID proposed stopped beside an opioid that stays (held or continued: no stop is
    proposed) asks nothing: the pain keeps a drug. A note's home list is one fact for all its
    drugs, so the stop must name the drug: ibuprofen, whose stop nothing proposes here (no heart
    disease), is not counted stopped with tramadol, and remains."""
    oxycodone = fx.medication_statement("o", "oxycodone hydrochloride 10 MG Oral Tablet")
    assert pain_plans(drafted(HEART, KNEE, NAPROXEN, oxycodone)) == []
    admission = fx.condition("d", "Dependent drug abuse (disorder)")
    pain = fx.condition("cp", "Chronic pain (finding)", encounter_id=None)
    listed = fx.document_reference(
        "hp",
        fx.attachment(
            "# Medications\nibuprofen 400 mg oral tablet; "
            "tramadol hydrochloride 50 mg oral tablet\n"
        ),
    )
    assert pain_plans(drafted(admission, pain, listed)) == []
