"""A diabetes on the record asks for the glycaemic control the discharge plan rests on: an HbA1c
is measured on admission where none of the three months before is on record (ADA Standards of
Care in Diabetes 2024, 16.1). Readers of transplant and infarction stays found type 2 diabetes on
the problem list with no HbA1c, no glucose and no word on its plan. An HbA1c of the stay or of
the three months before answers it; prediabetes asks nothing. The HbA1c of weeks before is read
for the problem only, not as a result of the stay. With no glucose-lowering drug going home or
at home either, the line asks for the plan too (ADA 2024, 16.9): two readers of transplant stays
found it asked for an HbA1c "but never flags that the discharge list has no diabetes therapy at
all"."""

from __future__ import annotations

from typing import Any

import pytest

from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections
from tests.pipeline.test_indicated_therapy import risks, state_of

ASKED = (
    "Diabetes (Diabetes mellitus type 2) with no HbA1c recorded in this episode or the three "
    "months before: the glycaemic control that the diabetes plan at discharge (its drugs and "
    "monitoring) rests on is not documented: add it, or say where it is"
)
ASKED_WITH_PLAN = (
    "Diabetes (Diabetes mellitus type 2) with no HbA1c recorded in this episode or the three "
    "months before, and no glucose-lowering drug going home or at home: neither the glycaemic "
    "control nor the diabetes plan at discharge (diet alone, or which drugs, and the monitoring) "
    "is documented: add them, or say where they are"
)
METFORMIN = fx.ordered_in_stay(
    "met", "metformin hydrochloride 500 MG Oral Tablet", dose="1 tablet", frequency=(2, 1, "d")
)
# A home drug the admission note lists with no order behind it: at home, held or stopped.
HP_LISTING_INSULIN = fx.document_reference(
    "hp", fx.attachment("# Medications\ninsulin glargine 100 unt/ml injectable solution\n")
)
# Years before the stay, at no encounter of it: a problem on the list.
ON_THE_LIST: dict[str, Any] = {"encounter_id": None, "onset": "2010-05-01T10:00:00+00:00"}


def diabetes(display: str = "Diabetes mellitus type 2 (disorder)") -> dict[str, Any]:
    return fx.condition("dm", display, code="44054006", **ON_THE_LIST)


def hba1c(key: str, value: float, when: str, *, in_stay: bool = False) -> dict[str, Any]:
    measured = fx.observation(
        key, "Hemoglobin A1c/Hemoglobin.total in Blood", value, "%", loinc="4548-4", when=when
    )
    if not in_stay:
        measured.pop("encounter")
    return measured


def asked(*resources: dict[str, Any]) -> list[str]:
    return [r for r in risks(state_of(*resources)) if "HbA1c" in r]


@pytest.mark.parametrize(
    ("measured", "is_asked"),
    [
        ([], True),
        ([hba1c("a1c", 7.9, "2024-03-02T08:00:00+00:00", in_stay=True)], False),
        ([hba1c("a1c", 7.9, "2024-01-10T08:00:00+00:00")], False),
        ([hba1c("a1c", 7.9, "2023-10-20T08:00:00+00:00")], True),
    ],
    ids=["none at all", "one in the stay", "one seven weeks before", "one four months before"],
)
def test_a_diabetes_on_the_problem_list_asks_for_its_hba1c(
    measured: list[dict[str, Any]], is_asked: bool
) -> None:
    assert asked(diabetes(), METFORMIN, *measured) == [ASKED] * is_asked


@pytest.mark.parametrize(
    ("regimen", "line"),
    [
        ([], ASKED_WITH_PLAN),
        ([METFORMIN], ASKED),
        (
            [fx.medication_statement("ins", "insulin glargine 100 UNT/ML Injectable Solution")],
            ASKED,
        ),
        ([HP_LISTING_INSULIN], ASKED),
        ([fx.ordered_in_stay("ato", "atorvastatin 40 MG Oral Tablet")], ASKED_WITH_PLAN),
    ],
    ids=[
        "no drug at all",
        "metformin going home",
        "insulin continued from the home list",
        "insulin at home with no discharge order",
        "no glucose-lowering drug",
    ],
)
def test_with_no_glucose_lowering_drug_either_the_line_asks_for_the_plan(
    regimen: list[dict[str, Any]], line: str
) -> None:
    assert asked(diabetes(), *regimen) == [line]


def test_the_line_names_the_diabetes_not_each_complication_and_cites_all() -> None:
    kidney = fx.condition(
        "dkd",
        "Disorder of kidney due to diabetes mellitus (disorder)",
        code="127013003",
        **ON_THE_LIST,
    )
    state = state_of(diabetes(), kidney)
    (flag,) = [f for f in state.flags_for_review if "HbA1c" in f.reason]
    assert flag.reason == ASKED_WITH_PLAN
    cited = {source.resource for i in flag.fact_ids for source in state.fact(i).sources}
    assert {"Condition/dm", "Condition/dkd"} <= cited


@pytest.mark.parametrize(
    "display", ["Prediabetes (finding)", "History of gestational diabetes mellitus (situation)"]
)
def test_prediabetes_or_a_past_gestational_diabetes_asks_nothing(display: str) -> None:
    assert asked(fx.condition("dm", display, code="714628002", **ON_THE_LIST)) == []


def key_results(*resources: dict[str, Any]) -> list[str]:
    return sections(state_of(diabetes(), *resources)).get("results", [])


def test_an_hba1c_of_weeks_before_is_the_problems_not_a_result_of_the_stay() -> None:
    lines = key_results(hba1c("a1c", 8.4, "2024-01-10T08:00:00+00:00"))
    assert not [line for line in lines if "A1c" in line]


def test_an_hba1c_of_the_days_before_is_still_a_result_line() -> None:
    """Read back three months for the diabetes, an HbA1c of the week before admission is still
    what any test of that week is: the current value, out of range, on the results."""
    lines = key_results(hba1c("a1c", 8.4, "2024-02-25T08:00:00+00:00"))
    assert [line for line in lines if "A1c" in line and "8.4 %" in line]
