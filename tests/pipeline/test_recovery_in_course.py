"""The course dates the recovery the record holds after an operation: the post-operative care
that the Procedures section leaves out as routine care is the course's "then postoperative care
until <date>" (ten readers of the last rounds found the course silent on it); with no operation,
or no such care after it, the line reads as before (hand-written FHIR)."""

from __future__ import annotations

from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

OPERATED = "2024-03-02T09:00:00+00:00"


def recovery(care_id: str, start: str, end: str) -> dict[str, Any]:
    care = fx.procedure(care_id, "Postoperative care (regime/therapy)", when=start)
    del care["performedDateTime"]
    return care | {"performedPeriod": {"start": start, "end": end}}


def course_and_procedures(*resources: dict[str, Any]) -> tuple[list[str], list[str]]:
    state = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    course = [s.text for s in summary.section("hospital_course").sentences]
    return course, [s.text for s in summary.section("procedures").sentences]


def test_the_recovery_after_an_operation_is_dated_on_its_course_line() -> None:
    course, procedures = course_and_procedures(
        fx.procedure("ligation", "Ligation of bilateral fallopian tubes", when=OPERATED),
        recovery("care", "2024-03-02T11:00:00+00:00", "2024-03-03T08:00:00+00:00"),
    )
    assert (
        "Procedures: Ligation of bilateral fallopian tubes on 2024-03-02, then postoperative "
        "care until 2024-03-03." in course
    )
    # Routine care still: the Procedures section lists the operation alone.
    assert procedures == ["Ligation of bilateral fallopian tubes (completed) on 2024-03-02."]


def test_care_before_the_operation_or_beside_no_operation_is_not_its_recovery() -> None:
    earlier = recovery("care", "2024-03-01T11:00:00+00:00", "2024-03-01T20:00:00+00:00")
    course, _ = course_and_procedures(
        fx.procedure("ligation", "Ligation of bilateral fallopian tubes", when=OPERATED), earlier
    )
    assert "Procedures: Ligation of bilateral fallopian tubes on 2024-03-02." in course
    therapy, _ = course_and_procedures(
        fx.procedure("ot", "Occupational therapy", when=OPERATED),
        recovery("care", "2024-03-02T11:00:00+00:00", "2024-03-03T08:00:00+00:00"),
    )
    assert "Procedures: Occupational therapy on 2024-03-02." in therapy
