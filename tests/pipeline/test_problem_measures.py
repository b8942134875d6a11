"""A problem that its own defining measure no longer bears out says so on its line: "Body mass
index 30+ - obesity" beside a body mass index of 27 (WHO: obesity is 30 or more; the
``problem_measures`` table). The measure is read in the stay or in the year before it, and it is
never a result of the stay nor its condition at discharge."""

from __future__ import annotations

from pipeline.clinical.tables import table
from pipeline.evidence.mapped import PROBLEM_MEASURE_DAYS
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections

OBESITY = "Body mass index 30+ - obesity (finding)"


def bmi(key: str, value: float, when: str, *, in_stay: bool = False) -> dict:
    measured = fx.observation(
        key,
        "Body mass index (BMI) [Ratio]",
        value,
        "kg/m2",
        loinc="39156-5",
        when=when,
        category="vital-signs",
    )
    if not in_stay:
        measured.pop("encounter")
    return measured


def drafted(problem: str, *measures: dict) -> dict[str, list[str]]:
    record = fx.bundle(
        fx.patient(),
        fx.encounter(),
        fx.condition("obese", problem, code="162864005", encounter_id=None, onset="2020-07-13"),
        *measures,
    )
    return sections(evidence_from_fhir(record, settings=PipelineSettings()))


def obesity_line(draft: dict[str, list[str]]) -> str:
    (line,) = [s for s in draft["active_problems"] if "obes" in s]
    return line


def test_obesity_beside_a_lower_bmi_measured_before_the_stay_says_so_with_the_value() -> None:
    draft = drafted(
        OBESITY,
        bmi("earlier", 31.0, "2023-06-01T08:00:00Z"),
        bmi("recent", 27.23, "2024-02-08T08:00:00Z"),
    )
    assert obesity_line(draft) == (
        "Active at discharge: Body mass index 30+ - obesity, since 2020-07-13; the latest body "
        "mass index, 27.2 kg/m2 on 2024-02-08, is below the 30 that defines it."
    )
    # Read for the problem's line only: no results line and no condition at discharge from it.
    assert not any("Body mass index" in line for line in draft["results"])
    assert not any("Body mass index" in line for line in draft["condition_at_discharge"])


def test_the_line_cites_the_measure_it_quotes() -> None:
    record = fx.bundle(
        fx.patient(),
        fx.encounter(),
        fx.condition("obese", OBESITY, code="162864005", encounter_id=None, onset="2020-07-13"),
        bmi("recent", 27.23, "2024-02-08T08:00:00Z"),
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("active_problems").sentences if "obes" in s.text]
    cited = {ref.resource for i in line.citations for ref in state.fact(i).sources}
    assert cited == {"Condition/obese", "Observation/recent"}


def test_a_bmi_that_bears_the_problem_out_or_none_within_the_year_leaves_the_line_alone() -> None:
    plain = "Active at discharge: Body mass index 30+ - obesity, since 2020-07-13."
    assert obesity_line(drafted(OBESITY, bmi("recent", 31.4, "2024-02-08T08:00:00Z"))) == plain
    # A BMI of 27 two years before admission is no current measure: not read.
    assert obesity_line(drafted(OBESITY, bmi("old", 27.0, "2022-01-10T08:00:00Z"))) == plain
    assert obesity_line(drafted(OBESITY)) == plain


def test_the_stays_own_measure_is_the_latest_and_each_class_has_its_own_threshold() -> None:
    in_stay = drafted(
        OBESITY,
        bmi("before", 27.0, "2024-02-08T08:00:00Z"),
        bmi("now", 30.5, "2024-03-02T08:00:00Z", in_stay=True),
    )
    assert obesity_line(in_stay).endswith("since 2020-07-13.")
    severe = drafted(
        "Body mass index 40+ - severely obese (finding)",
        bmi("recent", 35.1, "2024-02-08T08:00:00Z"),
    )
    assert obesity_line(severe).endswith(
        "; the latest body mass index, 35.1 kg/m2 on 2024-02-08, is below the 40 that defines it."
    )


def test_every_measure_the_table_reads_is_one_the_mapping_pulls_before_the_stay() -> None:
    measures = table("problem_measures", PipelineSettings())
    assert measures.source and measures.date
    assert {rule["code"] for rule in measures.extra["rules"]} <= set(PROBLEM_MEASURE_DAYS)
