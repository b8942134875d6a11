"""A result measured more than once reads as what the record holds: the same value twice on one
day is not a trend ("109 → 109 mmol/L (2024-09-17 to 2024-09-17)" read to two readers as a
change that never happened), and a first and last value that agree are never said as one value
repeated when another lies between them (hand-written FHIR)."""

from __future__ import annotations

from tests import fhir_fixtures as fx
from tests.pipeline.results_support import CREATININE, POTASSIUM, lab, results_of

MORNING, EVENING = "2024-03-02T08:00:00+00:00", "2024-03-02T20:00:00+00:00"


def test_the_same_value_twice_on_one_day_is_said_once_with_how_often() -> None:
    (line,) = results_of(
        lab("cr1", "Creatinine", 2.63, "mg/dL", CREATININE, MORNING),
        lab("cr2", "Creatinine", 2.63, "mg/dL", CREATININE, EVENING),
    )
    assert line == "Creatinine (H): 2.63 mg/dL, twice on 2024-03-02; reference 0.6 to 1.1."


def test_two_values_of_one_day_keep_their_arrow_and_say_the_day_once() -> None:
    (line,) = results_of(
        lab("cr1", "Creatinine", 2.63, "mg/dL", CREATININE, MORNING),
        lab("cr2", "Creatinine", 3.1, "mg/dL", CREATININE, EVENING),
    )
    assert line == "Creatinine (H): 2.63 → 3.10 mg/dL on 2024-03-02; reference 0.6 to 1.1."


def test_a_first_and_last_value_that_agree_are_not_one_value_repeated() -> None:
    """A peak between two equal values is a change: the line keeps its arrow."""
    line, *_ = results_of(
        lab("cr1", "Creatinine", 2.63, "mg/dL", CREATININE, MORNING),
        lab("cr2", "Creatinine", 4.2, "mg/dL", CREATININE, "2024-03-03T08:00:00+00:00"),
        lab("cr3", "Creatinine", 2.63, "mg/dL", CREATININE, "2024-03-04T08:00:00+00:00"),
    )
    assert line.startswith("Creatinine (H): 2.63 → 2.63 mg/dL (2024-03-02 to 2024-03-04)")


def test_a_value_a_flag_cites_is_read_against_its_value_before_admission() -> None:
    """A potassium of 5.05 twice, in range but above the level at which lisinopril is reviewed,
    has its own line; the 4.0 of the week before is what shows it rose (a reader found "5.1 → 5.1"
    with no rise said)."""
    last_week = "2024-02-23T08:00:00+00:00"
    before = lab("k0", "Potassium", 4.0, "mmol/L", POTASSIUM, last_week)
    del before["encounter"]
    lines = results_of(
        fx.medication_request("l", "lisinopril 10 MG Oral Tablet", encounter_id=fx.ENCOUNTER_ID),
        before,
        lab("k1", "Potassium", 5.05, "mmol/L", POTASSIUM, MORNING),
        lab("k2", "Potassium", 5.05, "mmol/L", POTASSIUM, EVENING),
    )
    assert (
        "Potassium: 5.1 mmol/L, twice on 2024-03-02; before admission 4.0 mmol/L on 2024-02-23."
        in lines
    )
