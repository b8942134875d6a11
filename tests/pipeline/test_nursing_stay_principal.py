"""A nursing stay coded only as the transfer has no principal diagnosis to name: its flagged line
says what the episode did by name, each procedure once, and leaves the days to the Procedures
section (four readers found the same therapy sessions, each with its date, on the diagnosis
line, in Procedures and in the course: "filler"; hand-written FHIR)."""

from __future__ import annotations

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

TRANSFER = "Patient transfer to skilled nursing facility (procedure)"


def test_the_unnamed_principal_line_names_each_procedure_once_without_its_days() -> None:
    therapies = [
        fx.procedure(
            f"ot-{day}",
            "Occupational therapy (regime/therapy)",
            when=f"2024-03-0{day}T09:00:00+00:00",
        )
        for day in (1, 3, 4)
    ] + [fx.procedure("pt", "Physical therapy procedure", when="2024-03-02T09:00:00+00:00")]
    stay = fx.encounter() | {"reasonCode": [{"text": TRANSFER}]}
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, *therapies), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = summary.section("diagnoses").sentences
    assert line.text == (
        "Principal diagnosis not documented: the stay is coded only as Patient transfer to "
        "skilled nursing facility; done in the episode (see Procedures): Occupational therapy; "
        "Physical therapy procedure."
    )
    assert [flag.code for flag in line.flags] == ["principal_not_documented"]
    assert len(line.citations) == 5  # the stay and each session, every one still cited
    procedures = [s.text for s in summary.section("procedures").sentences]
    assert "Occupational therapy (completed) on 3 days from 2024-03-01 to 2024-03-04." in procedures
