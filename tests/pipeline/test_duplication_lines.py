"""Therapeutic duplication at discharge on hand-built records: flagged, carried on each drug's
line by its headline, an old order duplicated by a new one proposed stopped, and one drug at
two strengths no duplication of its class."""

from __future__ import annotations

import pytest

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.test_medication_rules import BEFORE, FULL, drafted


@pytest.mark.parametrize(
    ("first", "second", "group"),
    [
        ("Clopidogrel 75 MG Oral Tablet", "prasugrel 10 MG Oral Tablet", "P2Y12 inhibitor"),
        (
            "lisinopril 10 MG Oral Tablet",
            "Losartan Potassium 50 MG Oral Tablet",
            "ACE inhibitor or ARB",
        ),
        ("Warfarin Sodium 5 MG Oral Tablet", "apixaban 5 MG Oral Tablet", "anticoagulant"),
        ("Atorvastatin 40 MG Oral Tablet", "Simvastatin 20 MG Oral Tablet", "statin"),
    ],
)
def test_therapeutic_duplication_at_discharge_is_flagged(
    first: str, second: str, group: str
) -> None:
    state, _ = drafted(
        fx.ordered_in_stay("a", first),
        fx.ordered_in_stay("b", second),
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "therapeutic_duplication"]
    assert flag.reason == f"Therapeutic duplication at discharge ({group}): {first}; {second}"


def test_a_drugs_line_names_its_question_and_needs_review_says_it_whole() -> None:
    """Lisinopril beside losartan, ordered together: one line of the list offers the choice and
    carries the duplication by its headline, once; the drugs it involves are said in Needs
    review (every line repeating them word for word was a third of a draft's noise)."""
    state = evidence_from_fhir(
        fx.stay(
            fx.ordered_in_stay("a", "lisinopril 10 MG Oral Tablet"),
            fx.ordered_in_stay("b", "losartan potassium 50 MG Oral Tablet"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, settings=PipelineSettings())
    lines = [
        s
        for s in summary.section("medications").sentences
        if "10 MG" in s.text or "50 MG" in s.text
    ]
    (line,) = lines
    assert line.text.startswith("ONE OF THESE, TO CONFIRM")
    # The line names the class already: its flag says what is left, not the line again.
    assert [(f.code, f.reason) for f in line.flags] == [
        ("therapeutic_duplication", "not both: the prescriber chooses which one continues")
    ]
    review = [s.text for s in summary.section("needs_review").sentences]
    assert (
        "Therapeutic duplication at discharge (ACE inhibitor or ARB): lisinopril 10 MG Oral "
        "Tablet; losartan potassium 50 MG Oral Tablet." in review
    )


def test_an_old_order_duplicated_by_a_new_one_is_proposed_stopped_on_its_own_line() -> None:
    """A 1997 metoprolol succinate order beside atenolol started in the stay: "confirm whether
    still taken" would leave two beta blockers; the older order is proposed stopped, to
    confirm, with the duplication on its line. An old order no stay order duplicates keeps
    the plain "confirm whether still taken"."""
    _, sections = drafted(
        fx.medication_request("old", "metoprolol succinate 100 MG", authored="1997-12-09", **FULL),  # type: ignore[arg-type]
        fx.medication_request("nitro", "Nitroglycerin 0.4 MG Spray", authored="1997-12-09", **FULL),  # type: ignore[arg-type]
        fx.ordered_in_stay("new", "atenolol 25 MG Oral Tablet", **FULL),
    )
    lines = sections["medications"]
    assert (
        "PROPOSED STOP, TO CONFIRM: metoprolol succinate 100 MG (ordered 1997-12-09, before this "
        "stay): duplicated by atenolol 25 MG Oral Tablet, ordered in this stay."
    ) in lines
    (left,) = [line for line in lines if line.startswith("Last ordered long before")]
    assert "Nitroglycerin" in left and "metoprolol" not in left


def test_one_drug_at_two_strengths_is_not_a_duplication_of_its_class() -> None:
    state, _ = drafted(
        fx.medication_request("a", "Clopidogrel 75 MG Oral Tablet", authored=BEFORE),
        fx.ordered_in_stay("b", "Clopidogrel 300 MG Oral Tablet"),
    )
    assert not [f for f in state.flags_for_review if f.code == "therapeutic_duplication"]


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet",
            "metoprolol tartrate 25 MG Oral Tablet",
            "; the strength falls from 100 mg to 25 mg a tablet: confirm the dose is meant to "
            "fall.",
        ),
        (
            "metoprolol tartrate 25 MG Oral Tablet",
            "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet",
            ", ordered in this stay.",
        ),
    ],
    ids=["a weaker tablet kept", "a stronger tablet kept"],
)
def test_an_old_order_proposed_stopped_for_a_weaker_tablet_of_its_drug_says_the_dose_falls(
    old: str, new: str, said: str
) -> None:
    """Reconciliation resolves dose differences (NPSG.03.06.01): stopping a 100 mg metoprolol
    for the stay's 25 mg tablet is a dose cut, which a reader found the line left unsaid. Only
    a fall is said, and only within one drug (atenolol for metoprolol, above, says nothing)."""
    _, sections = drafted(
        fx.medication_request("old", old, authored="1997-12-09", **FULL),  # type: ignore[arg-type]
        fx.ordered_in_stay("new", new, **FULL),
    )
    (line,) = [s for s in sections["medications"] if s.startswith("PROPOSED STOP")]
    assert line.endswith(said)


def test_a_weaker_tablet_taken_often_enough_to_keep_the_daily_dose_says_nothing() -> None:
    """Metoprolol tartrate 50 mg twice a day for a 100 mg succinate once a day: the tablet is
    weaker, the day's dose is not; the line says nothing of a fall."""
    twice = FULL | {"frequency": (2, 1, "d")}
    _, sections = drafted(
        fx.medication_request(
            "old",
            "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet",
            authored="1997-12-09",
            **FULL,  # type: ignore[arg-type]
        ),
        fx.ordered_in_stay("new", "metoprolol tartrate 50 MG Oral Tablet", **twice),
    )
    (line,) = [s for s in sections["medications"] if s.startswith("PROPOSED STOP")]
    assert line.endswith(", ordered in this stay.")
