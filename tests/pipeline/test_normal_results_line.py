"""The one line of results within their reference ranges: what it leaves out (screening scores
and indices) and how it cites a panel."""

from __future__ import annotations

import re

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.results_support import SODIUM, lab, results_of


def test_screening_scores_and_indices_are_left_out_unless_abnormal() -> None:
    lines = results_of(
        lab("na", "Sodium", 140, "mmol/L", SODIUM, "2024-03-02T08:00:00+00:00"),
        lab(
            "pdw", "Platelet distribution width", 12.1, "fL", "32207-3", "2024-03-02T08:00:00+00:00"
        ),
        lab("mpv", "Platelet mean volume", 10.2, "fL", "32623-1", "2024-03-02T08:00:00+00:00"),
        lab("audit", "AUDIT-C total score", 2, "{score}", "75626-2", "2024-03-02T08:00:00+00:00")
        | {"category": [{"coding": [{"code": "laboratory"}, {"code": "survey"}]}]},
    )
    assert lines == ["Other results within their reference ranges: Sodium."]


def test_normal_results_of_one_panel_on_one_line_cite_the_panel_once() -> None:
    from pipeline.summarizing.summary_text import render_markdown

    when = "2024-03-02T08:00:00+00:00"
    state = evidence_from_fhir(
        fx.stay(
            lab("na", "Sodium", 140, "mmol/L", "2951-2", when),
            lab("k", "Potassium", 4.2, "mmol/L", "2823-3", when),
            lab("cl", "Chloride", 102, "mmol/L", "2075-0", when),
            fx.diagnostic_report("bmp", "final", ["na", "k", "cl"]),
        ),
        settings=PipelineSettings(),
    )
    markdown = render_markdown(
        summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings()),
        state,
    )
    (line,) = [ln for ln in markdown.splitlines() if "Other results within" in ln]
    cited = re.search(r"\[(\d+)\]$", line)
    assert cited is not None  # one number for the three results
    assert f"DiagnosticReport [{cited.group(1)}]: bmp" in markdown
    assert "Observation [" not in markdown  # each result is in the panel's citation


def test_normal_results_are_named_by_their_analyte_once() -> None:
    """The line shows no value, so a LOINC long name's property, system and method ("[#/volume]
    in Blood by Automated count") say nothing there: each analyte is named by its component,
    once, though two codes measured it."""
    day = "2024-03-02T08:00:00+00:00"
    wbc = "Leukocytes [#/volume] in Blood by Automated count"
    lines = results_of(
        lab("wbc", wbc, 7, "10*3/uL", "6690-2", day),
        lab("na", "Sodium [Moles/volume] in Serum or Plasma", 140, "mmol/L", SODIUM, day),
        lab("na2", "Sodium [Moles/volume] in Blood", 139, "mmol/L", "2947-0", day),
        lab("tg", "Triglycerides", 120, "mg/dL", "2571-8", day),
    )
    assert lines == [
        "Other results within their reference ranges: Leukocytes; Sodium; Triglycerides."
    ]


def test_the_iron_studies_urea_and_magnesium_have_their_ranges_and_fold_in_when_normal() -> None:
    """A line each with no range ("Urea nitrogen: 14.58 → 14.58 mg/dL", "Ferritin: 53.43 →
    111.2 ug/L") was noise to three readers of a heart-failure stay: each analyte is read
    against its adult range, a normal one goes on the one line and one out of range says so. A
    high-sensitivity troponin in pg/mL is the same quantity as in ng/L."""
    day = "2024-03-02T08:00:00+00:00"
    lines = results_of(
        lab("bun", "Urea nitrogen [Mass/volume] in Serum or Plasma", 14.58, "mg/dL", "3094-0", day),
        lab("ferritin", "Ferritin [Mass/volume] in Serum or Plasma", 111.2, "ug/L", "2276-4", day),
        lab(
            "tn",
            "Troponin I.cardiac [Mass/volume] by High sensitivity method",
            0.03,
            "pg/mL",
            "89579-7",
            day,
        ),
        lab("fe", "Iron [Mass/volume] in Serum or Plasma", 58.75, "ug/dL", "2498-4", day),
    )
    assert lines[-1] == (
        "Other results within their reference ranges: Urea nitrogen; Ferritin; Troponin I.cardiac."
    )
    (iron,) = [line for line in lines if line.startswith("Iron")]
    assert "(L)" in iron and "reference 60 to 170" in iron
