"""The past history that bears on the principal diagnosis is said on its line, once: a previous
bypass beside a heart attack, a previous infarction beside heart failure (the diseases' data
standards, the ``relevant_history`` table); the rest of the past history keeps its own line."""

from __future__ import annotations

from pipeline.clinical.tables import table
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections

BEFORE = {"encounter_id": None}


def stay_for(principal: str, code: str, *history: dict) -> dict:
    """An inpatient stay whose reason is ``principal``, with earlier "History of" entries."""
    stay = fx.encounter() | {"reasonReference": [{"reference": "Condition/principal"}]}
    return fx.bundle(fx.patient(), stay, fx.condition("principal", principal, code=code), *history)


def cabg(onset: str = "1981-01-17", **where: str | None) -> dict:
    return fx.condition(
        "cabg",
        "History of coronary artery bypass grafting (situation)",
        code="399261000",
        onset=onset,
        **(where or BEFORE),
    )


def appendectomy() -> dict:
    return fx.condition(
        "appy",
        "History of appendectomy (situation)",
        code="428251008",
        onset="1987-07-25",
        **BEFORE,
    )


def test_a_previous_bypass_is_said_on_the_infarctions_line_and_not_again_in_past_history() -> None:
    state = evidence_from_fhir(
        stay_for(
            "Acute non-ST segment elevation myocardial infarction (disorder)",
            "401314000",
            cabg(),
            appendectomy(),
        ),
        settings=PipelineSettings(),
    )
    drafted = sections(state)
    assert drafted["diagnoses"] == [
        "Acute non-ST segment elevation myocardial infarction: principal diagnosis, the reason "
        "for the stay, onset 2024-03-01, active; relevant past history: coronary artery bypass "
        "grafting (recorded 1981-01-17)."
    ]
    assert drafted["active_problems"] == ["Past history: appendectomy (recorded 1987-07-25)."]
    (line,) = summarize_evidence(state, settings=PipelineSettings()).section("diagnoses").sentences
    cited = {ref.resource for i in line.citations for ref in state.fact(i).sources}
    assert "Condition/cabg" in cited and "Condition/appy" not in cited


def test_only_the_history_its_disease_names_bears_on_the_principal_diagnosis() -> None:
    """A previous infarction bears on heart failure; an appendectomy bears on neither, and a
    previous bypass does not bear on a stroke: both stay on the past-history line."""
    failure = sections(
        evidence_from_fhir(
            stay_for(
                "Chronic congestive heart failure (disorder)",
                "88805009",
                fx.condition(
                    "mi",
                    "History of myocardial infarction (situation)",
                    code="399211009",
                    onset="2003-07-19",
                    **BEFORE,
                ),
                appendectomy(),
            ),
            settings=PipelineSettings(),
        )
    )
    assert failure["diagnoses"][0].endswith(
        "; relevant past history: myocardial infarction (recorded 2003-07-19)."
    )
    stroke = sections(
        evidence_from_fhir(
            stay_for("Cerebrovascular accident (disorder)", "230690007", cabg(), appendectomy()),
            settings=PipelineSettings(),
        )
    )
    assert "relevant past history" not in stroke["diagnoses"][0]
    assert stroke["active_problems"] == [
        "Past history: coronary artery bypass grafting (recorded 1981-01-17); appendectomy "
        "(recorded 1987-07-25)."
    ]


def test_a_history_recorded_in_the_stay_is_its_own_events_aftermath_not_past_history() -> None:
    """Synthea records "History of coronary artery bypass grafting" the day of the bypass, and
    not always on the stay's encounter: an event of this episode is no earlier history of it."""
    drafted = sections(
        evidence_from_fhir(
            stay_for(
                "Acute ST segment elevation myocardial infarction (disorder)",
                "401303003",
                cabg(onset="2024-03-02T10:00:00Z"),
            ),
            settings=PipelineSettings(),
        )
    )
    assert not any("relevant past history" in line for line in drafted["diagnoses"])


def test_the_relevant_history_table_names_its_sources_and_each_rules_two_sides() -> None:
    relevant = table("relevant_history", PipelineSettings())
    assert "ACCF/AHA" in relevant.source and relevant.date
    for rule in relevant.extra["rules"]:
        assert rule["principal"]["keywords"] and rule["history"]["keywords"]
        assert all(word == word.lower() for word in rule["history"]["keywords"])
