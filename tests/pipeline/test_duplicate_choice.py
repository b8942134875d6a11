"""Two drugs of one class ordered for home together are one choice on one line of the list,
never two drugs continued (hand-written FHIR); a duplication with an older order keeps its
proposed stop instead."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.test_indicated_therapy import FULL, going_home


def medication_lines(*resources: dict[str, Any]) -> list[str]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [s.text for s in summary.section("medications").sentences]


def test_an_ace_inhibitor_and_an_arb_ordered_together_are_one_choice() -> None:
    """KDIGO 2021 and ONTARGET: not given together. The list says one of them, each as its own
    line would, and continues neither."""
    lines = medication_lines(
        going_home("l", "losartan potassium 50 MG Oral Tablet"),
        going_home("p", "lisinopril 20 MG Oral Tablet"),
    )
    (choice,) = [line for line in lines if "losartan" in line or "lisinopril" in line]
    assert choice == (
        "ONE OF THESE, TO CONFIRM (two of one class at discharge: ACE inhibitor or ARB): NEW: "
        "losartan potassium 50 MG Oral Tablet (1 tablet once daily, oral); or NEW: lisinopril "
        "20 MG Oral Tablet (1 tablet once daily, oral)."
    )


def test_a_duplicate_of_an_older_order_keeps_its_proposed_stop() -> None:
    """The stay's atenolol duplicates a metoprolol order of years before: the older one is
    proposed stopped on a line of its own, not offered as a choice."""
    old = fx.medication_request(
        "m",
        "metoprolol succinate 100 MG Extended Release Oral Tablet",
        authored="2019-01-01",
        **FULL,  # type: ignore[arg-type]
    )
    lines = medication_lines(old, going_home("a", "atenolol 25 MG Oral Tablet"))
    assert not any(line.startswith("ONE OF THESE") for line in lines)
    assert any("atenolol 25 MG Oral Tablet" in line for line in lines)


def test_a_drug_in_two_duplications_makes_one_choice_and_keeps_every_other_line() -> None:
    """Hydrocodone with ibuprofen duplicates oxycodone (opioid) and naproxen (NSAID): one choice
    line for the first duplication, and naproxen keeps its own line with its doubt; no line is
    lost or nested."""
    lines = medication_lines(
        going_home("c", "hydrocodone bitartrate 5 MG / ibuprofen 200 MG Oral Tablet"),
        going_home("o", "oxycodone hydrochloride 5 MG Oral Tablet"),
        going_home("n", "naproxen sodium 220 MG Oral Tablet"),
    )
    choices = [line for line in lines if line.startswith("ONE OF THESE")]
    assert len(choices) == 1 and choices[0].count("ONE OF THESE") == 1
    assert "hydrocodone" in choices[0] and "oxycodone" in choices[0]
    assert "NEW, TO CONFIRM: naproxen sodium 220 MG Oral Tablet (1 tablet once daily, oral)." in (
        lines
    )
