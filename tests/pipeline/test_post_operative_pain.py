"""After an operation, Discharge medications says when nothing going home relieves pain (APS/
ASRA/ASA 2016: a documented pain plan that carries on at home), on hand-built records: any
analgesic going home, to confirm, or on a note's home list answers it; a stay with no
operation asks nothing."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

APPENDECTOMY = fx.procedure("op", "Excision of appendix", when="2024-03-01T12:00:00+00:00")
FULL: dict[str, Any] = {"dose": "1 tablet", "frequency": (1, 6, "h"), "route": "oral"}
NO_ANALGESIC = (
    "No analgesic going home after Excision of appendix on 2024-03-01 (none ordered or on the "
    "home list): state the pain relief at home, or that none is needed."
)


def medications(*resources: dict[str, Any]) -> list[Sentence]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return summary.section("medications").sentences


def test_an_operation_with_nothing_for_pain_going_home_says_so_in_the_list() -> None:
    """Not a flag: a missing element stated, citing the operation, checked as supported."""
    lines = medications(APPENDECTOMY)
    (line,) = [s for s in lines if s.text.startswith("No analgesic")]
    assert line.text == NO_ANALGESIC
    assert not line.flags and line.verdict == "supported" and line.citations


def test_acetaminophen_going_home_answers_it() -> None:
    paracetamol = fx.medication_request(
        "p", "Acetaminophen 325 MG Oral Tablet", encounter_id=fx.ENCOUNTER_ID, **FULL
    )
    assert NO_ANALGESIC not in [s.text for s in medications(APPENDECTOMY, paracetamol)]


def test_an_nsaid_on_the_notes_home_list_answers_it() -> None:
    """A home drug only a note lists, with no discharge order, is at home all the same."""
    note = fx.document_reference(
        "hp", fx.attachment("# Medications\nibuprofen 400 mg oral tablet\n")
    )
    assert NO_ANALGESIC not in [s.text for s in medications(APPENDECTOMY, note)]


def test_a_stay_without_an_operation_asks_nothing() -> None:
    x_ray = fx.procedure("cxr", "Plain chest X-ray")
    assert not [s for s in medications(x_ray) if s.text.startswith("No analgesic")]


def test_beside_a_drug_use_disorder_the_line_asks_for_non_opioid_relief() -> None:
    """CDC 2022 and ASAM 2020: pain in a patient with a substance use disorder is treated first
    with non-opioid analgesics. The disorder on the problem list is named and cited; one in
    remission, or a relative's, is not."""
    disorder = fx.condition(
        "sud", "Dependent drug abuse (disorder)", encounter_id=None, onset="2010-01-01"
    )
    (line,) = [s for s in medications(APPENDECTOMY, disorder) if s.text.startswith("No analgesic")]
    assert line.text == NO_ANALGESIC.removesuffix(".") + (
        "; a drug use disorder is on record (Dependent drug abuse): prefer non-opioid relief."
    )
    assert line.verdict == "supported" and len(line.citations) == 2
    remission = fx.condition(
        "sud", "Opioid dependence in remission (disorder)", encounter_id=None, onset="2010-01-01"
    )
    texts = [s.text for s in medications(APPENDECTOMY, remission)]
    assert NO_ANALGESIC in texts
