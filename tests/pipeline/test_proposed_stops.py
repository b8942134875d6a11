"""A drug a guideline says to withdraw in this patient (an NSAID with coronary heart disease or
heart failure, an opioid after an admission for substance use) is proposed stopped on a line of
its own, for the physician to confirm, wherever the reconciliation had put it, and is said
nowhere else in the list (hand-written FHIR)."""

from __future__ import annotations

from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL: dict[str, object] = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}
CORONARY = fx.condition("ihd", "Ischemic heart disease (disorder)", encounter_id=None)


def medications(*resources: dict) -> list[Sentence]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    return summary.section("medications").sentences


def test_a_home_nsaid_from_the_notes_list_is_proposed_stopped_and_the_rest_stay_asked() -> None:
    """Ibuprofen and lisinopril on the H&P's list, no discharge order for either, coronary
    disease on the problem list: ibuprofen's stop is proposed, flagged for the signature;
    lisinopril, which the note's list names too, is still asked about as held or stopped (and
    the statin the coronary disease calls for is said missing)."""
    listed = "# Medications\nibuprofen 400 mg oral tablet; lisinopril 10 mg oral tablet\n"
    hp = fx.document_reference("hp", fx.attachment(listed))
    lines = medications(CORONARY, hp)
    assert [line.text for line in lines] == [
        "PROPOSED STOP, TO CONFIRM: ibuprofen 400 mg oral tablet (at home, with no discharge "
        "order): an NSAID with coronary heart disease (Ischemic heart disease (disorder)).",
        "No statin at discharge with chronic coronary disease on the problem list (Ischemic "
        "heart disease).",
        "Home medications with no discharge order (held or stopped? confirm): lisinopril 10 mg "
        "oral tablet.",
    ]
    assert lines[0].awaiting_review
    assert lines[0].review_reasons() == "stop it, or say why it is needed"


def test_an_nsaid_ordered_in_the_stay_or_an_old_order_says_where_it_was() -> None:
    failing = fx.condition("hf", "Chronic congestive heart failure (disorder)")
    ordered = fx.ordered_in_stay("n", "Naproxen sodium 220 MG Oral Tablet", **FULL)
    assert medications(failing, ordered)[0].text == (
        "PROPOSED STOP, TO CONFIRM: Naproxen sodium 220 MG Oral Tablet (ordered in this stay): an "
        "NSAID with heart failure (Chronic congestive heart failure (disorder))."
    )
    old = fx.medication_request("n", "Naproxen sodium 220 MG Oral Tablet", authored="1988-04-08")
    line = medications(CORONARY, old)[0]
    assert line.text == (
        "PROPOSED STOP, TO CONFIRM: Naproxen sodium 220 MG Oral Tablet (last ordered 1988-04-08, "
        "before this stay): an NSAID with coronary heart disease (Ischemic heart disease "
        "(disorder))."
    )


def test_an_opioid_at_home_after_an_admission_for_drug_abuse_is_proposed_stopped() -> None:
    abuse = fx.condition("sud", "Dependent drug abuse (disorder)")
    home = fx.medication_statement("t", "tramadol hydrochloride 50 MG Oral Tablet")
    texts = [line.text for line in medications(abuse, home)]
    assert texts[0] == (
        "PROPOSED STOP, TO CONFIRM: tramadol hydrochloride 50 MG Oral Tablet (at home, with no "
        "discharge order): an opioid or benzodiazepine after an admission for substance use "
        "(Dependent drug abuse)."
    )
    assert not any("held or stopped" in text for text in texts)
    # Needs review does not ask again whether it is held or stopped: the list proposes its stop.
    state = evidence_from_fhir(fx.stay(abuse, home), settings=PipelineSettings())
    review = summarize_evidence(state, settings=PipelineSettings()).section("needs_review")
    assert not any(s.text.startswith("Home medications with no") for s in review.sentences)
    assert any(s.text.startswith("An opioid or benzodiazepine") for s in review.sentences)


def test_without_the_disease_an_nsaid_is_listed_as_before() -> None:
    hp = fx.document_reference("hp", fx.attachment("# Medications\nibuprofen 400 mg oral tablet\n"))
    assert [line.text for line in medications(hp)] == [
        "Home medications with no discharge order (held or stopped? confirm): ibuprofen 400 mg "
        "oral tablet."
    ]
