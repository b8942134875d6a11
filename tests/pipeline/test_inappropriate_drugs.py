"""Drugs to avoid for this patient (AGS Beers Criteria): by age, and an NSAID with heart failure
or coronary heart disease; each a Needs review line that names the drugs and the harm, and that
the checker supports."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.conftest import needs_review_line
from tests.pipeline.test_regimen_risks import going_home, risks


def drafted(*resources: dict, birth: str = "1949-06-28") -> EvidenceState:
    patient = fx.patient() | {"birthDate": birth}
    return evidence_from_fhir(
        fx.bundle(patient, fx.encounter(), *resources), settings=PipelineSettings()
    )


def beers(state: EvidenceState) -> list[str]:
    return [reason for reason in risks(state) if reason.startswith("Potentially inappropriate")]


def test_a_drug_to_avoid_in_older_adults_is_flagged_from_65_only() -> None:
    meperidine = going_home("m", "Meperidine Hydrochloride 50 MG Oral Tablet")
    zolpidem = going_home("z", "zolpidem tartrate 5 MG Oral Tablet")
    assert beers(drafted(meperidine, zolpidem)) == [
        "Potentially inappropriate at 74 (AGS Beers Criteria): Meperidine Hydrochloride 50 MG "
        "Oral Tablet: meperidine (neurotoxicity and delirium; not an effective oral analgesic at "
        "usual doses); zolpidem tartrate 5 MG Oral Tablet: a hypnotic 'Z-drug' (delirium, falls, "
        "fractures): confirm each is needed, or choose an alternative"
    ]
    assert beers(drafted(meperidine, zolpidem, birth="1970-01-01")) == []


def test_a_drug_prescribed_in_a_note_and_given_but_not_yet_ordered_is_checked_too() -> None:
    """Meperidine given in the stay and prescribed in its note, with no order at discharge:
    it may go home, so its Beers line is there before anyone decides."""
    given = fx.medication_request(
        "m", "Meperidine Hydrochloride 50 MG Oral Tablet", status="completed"
    )
    note = fx.document_reference(
        "plan",
        fx.attachment(
            "# Assessment and Plan\n\n## Plan\n\nThe patient was prescribed the following "
            "medications:\n- meperidine hydrochloride 50 mg oral tablet\n"
        ),
    )
    assert any(
        reason.startswith("Potentially inappropriate at 74")
        for reason in risks(drafted(given, note))
    )


def test_an_nsaid_with_heart_failure_is_flagged_and_the_line_is_supported() -> None:
    failing = fx.condition("hf", "Chronic congestive heart failure (disorder)", encounter_id=None)
    naproxen = going_home("n", "Naproxen sodium 220 MG Oral Tablet")
    state = drafted(failing, naproxen, birth="1980-01-01")
    assert risks(state) == [
        "An NSAID with heart failure (Chronic congestive heart failure (disorder)): Naproxen "
        "sodium 220 MG Oral Tablet: NSAIDs retain fluid and worsen heart failure (AGS Beers "
        "Criteria; ACC/AHA/HFSA heart failure guideline): proposed stop, unless it is needed"
    ]
    line = needs_review_line(state, "NSAID")
    assert line.verdict == "supported", line.review_reasons()
    history = fx.condition("h", "History of heart failure", encounter_id=None)
    assert risks(drafted(history, naproxen, birth="1980-01-01")) == []


def test_an_nsaid_with_coronary_heart_disease_says_the_harm_to_the_heart() -> None:
    """Naproxen beside a heart attack: NSAIDs raise the risk of reinfarction and death (the
    STEMI guideline stops them, class III), which the bleeding line does not say. A history of
    infarction is coronary disease still; a patient only "at risk of" it is not. With heart
    failure as well, one line says both harms. The line is supported: it names no year the
    record does not hold."""
    infarct = fx.condition("mi", "History of myocardial infarction (situation)", encounter_id=None)
    ibuprofen = going_home("i", "Ibuprofen 400 MG Oral Tablet")
    assert risks(drafted(infarct, ibuprofen, birth="1980-01-01")) == [
        "An NSAID with coronary heart disease (History of myocardial infarction (situation)): "
        "Ibuprofen 400 MG Oral Tablet: NSAIDs raise the risk of reinfarction and death in "
        "coronary heart disease (ACCF/AHA STEMI guideline: class III, harm; AHA statement on "
        "NSAIDs): proposed stop, unless it is needed"
    ]
    at_risk = fx.condition("r", "At risk of coronary heart disease", encounter_id=None)
    assert risks(drafted(at_risk, ibuprofen, birth="1980-01-01")) == []
    failing = fx.condition("hf", "Chronic congestive heart failure (disorder)", encounter_id=None)
    state = drafted(infarct, ibuprofen, birth="1980-01-01")
    line = needs_review_line(state, "NSAID")
    assert line.verdict == "supported", line.review_reasons()
    (both,) = risks(drafted(failing, infarct, ibuprofen, birth="1980-01-01"))
    assert both.startswith(
        "An NSAID with heart failure (Chronic congestive heart failure (disorder)) and coronary "
        "heart disease (History of myocardial infarction (situation)): Ibuprofen 400 MG Oral "
        "Tablet: NSAIDs retain fluid and worsen heart failure"
    )
