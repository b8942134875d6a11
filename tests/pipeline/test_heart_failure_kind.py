"""A stay for heart failure names its kind on the principal diagnosis's line, read from the
record: an emergency visit for it that began the stay makes it an acute decompensation (the ESC
definition of acute heart failure), and the latest ejection fraction on record gives its class
(2022 AHA/ACC/HFSA: reduced to 40 %, mildly reduced 41 to 49 %, preserved from 50 %). Readers of
a heart-failure readmission asked for both in every round (hand-written FHIR)."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FAILURE = "Chronic congestive heart failure (disorder)"
SNOMED = "http://snomed.info/sct"
LVEF = "10230-1"


def emergency_visit(reason: str = FAILURE) -> dict[str, Any]:
    """The emergency visit the stay began with, the same morning."""
    visit = fx.encounter("ed", fx.ADMIT, "2024-03-01T12:00:00+00:00", "EMER")
    return visit | {"reasonCode": [{"text": reason}]}


def ejection_fraction(value: float, when: str = "2024-01-10T09:00:00+00:00") -> dict[str, Any]:
    measured = fx.observation(
        "lvef", "Left ventricular Ejection fraction", value, "%", loinc=LVEF, when=when
    )
    del measured["encounter"]
    return measured


def principal_line(*resources: dict[str, Any], reason: str = FAILURE) -> Sentence:
    """The principal diagnosis's line of a stay coded for ``reason``, a condition on the problem
    list since 2023."""
    code = "88805009" if reason == FAILURE else "233604007"
    coded = {"coding": [{"system": SNOMED, "code": code, "display": reason}], "text": reason}
    stay = fx.encounter() | {"reasonCode": [coded]}
    diagnosis = fx.condition(
        "hf", reason, code=code, onset="2023-08-14T09:00:00+00:00", encounter_id=None
    )
    record = fx.bundle(fx.patient(), stay, diagnosis, *resources)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return summary.section("diagnoses").sentences[0]


def test_an_emergency_admission_for_chronic_heart_failure_says_it_decompensated() -> None:
    line = principal_line(emergency_visit(), ejection_fraction(45.57))
    assert line.text == (
        "Chronic congestive heart failure: principal diagnosis, the reason for the stay, onset "
        "2023-08-14, active; an acute decompensation, begun by the emergency visit for it of "
        "2024-03-01 (acute heart failure by the ESC guideline's definition); mildly reduced "
        "ejection fraction (Left ventricular Ejection fraction 45.57 % on 2024-01-10, the latest "
        "on record)."
    )
    assert line.verdict == "supported" and not line.flags


def test_the_ejection_fraction_gives_the_class_at_the_guidelines_whole_numbers() -> None:
    def named(value: float) -> str:
        return principal_line(ejection_fraction(value)).text

    assert "; reduced ejection fraction (" in named(35)
    assert "; reduced ejection fraction (" in named(40.3)
    assert "; mildly reduced ejection fraction (" in named(41)
    assert "; preserved ejection fraction (" in named(55)
    assert "acute decompensation" not in named(55)  # no emergency visit: only the class


def test_a_stay_the_record_says_neither_of_or_another_diagnosis_reads_as_before() -> None:
    plain = principal_line()
    assert plain.text == (
        "Chronic congestive heart failure: principal diagnosis, the reason for the stay, onset "
        "2023-08-14, active."
    )
    pneumonia = principal_line(
        emergency_visit("Pneumonia"), ejection_fraction(35), reason="Pneumonia"
    )
    assert pneumonia.text.startswith("Pneumonia: principal diagnosis")
    assert "ejection fraction" not in pneumonia.text
    # An emergency visit for something else, or one later in the stay, does not make the heart
    # failure acute.
    other_visit = principal_line(emergency_visit("Fall"))
    assert "acute decompensation" not in other_visit.text
    later = emergency_visit() | {
        "period": {"start": fx.IN_STAY, "end": "2024-03-02T12:00:00+00:00"}
    }
    assert "acute decompensation" not in principal_line(later).text
