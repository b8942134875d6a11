"""A transplant recipient's statin is read beside the immunosuppression it is chosen with:
cyclosporine makes simvastatin and pitavastatin contraindicated, lovastatin and atorvastatin to
be avoided, and the other statins limited to low doses (their labels). With cyclosporine going
home, or no immunosuppressant on the list at all, one line says so; tacrolimus alone asks
nothing. Four readers of three kidney-transplant stays named simvastatin going home with no
word on the immunosuppression to come."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pipeline.clinical.statin_interactions import transplant_statin_flags
from pipeline.clinical.tables import table
from pipeline.settings import PipelineSettings
from tests import fhir_fixtures as fx
from tests.pipeline.test_indicated_therapy import RECIPIENT_SINCE, risks, state_of

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


RECIPIENT = fx.condition("t", "History of renal transplant (situation)", **RECIPIENT_SINCE)
SIMVASTATIN = going_home("s", "Simvastatin 20 MG Oral Tablet")


def statin_lines(*resources: dict[str, Any]) -> list[str]:
    return [r for r in risks(state_of(*resources)) if "cyclosporine, " in r]


def test_a_statin_after_a_transplant_with_no_immunosuppressant_is_chosen_with_it() -> None:
    assert statin_lines(RECIPIENT, SIMVASTATIN) == [
        "Simvastatin 20 MG Oral Tablet after solid-organ transplant (History of renal "
        "transplant) with no immunosuppressant on the list: should it include cyclosporine, "
        "simvastatin is contraindicated (myopathy, rhabdomyolysis): choose the statin with the "
        "immunosuppression"
    ]


@pytest.mark.parametrize(
    ("statin", "label"),
    [
        ("Simvastatin 20 MG Oral Tablet", "simvastatin is contraindicated"),
        ("atorvastatin 40 MG Oral Tablet", "atorvastatin is to be avoided"),
        ("pravastatin sodium 20 MG Oral Tablet", "pravastatin is limited to a low dose"),
    ],
)
def test_beside_cyclosporine_the_line_says_what_the_statins_label_says(
    statin: str, label: str
) -> None:
    cyclosporine = going_home("cy", "cycloSPORINE 100 MG Oral Capsule")
    (line,) = statin_lines(RECIPIENT, going_home("s", statin), cyclosporine)
    assert line.startswith(f"{statin} with cycloSPORINE 100 MG Oral Capsule after solid-organ")
    assert f": with cyclosporine, {label} (myopathy, rhabdomyolysis): change the statin" in line


def test_two_statins_are_each_said_under_the_one_condition() -> None:
    """Two readers read "simvastatin is contraindicated; atorvastatin is to be avoided with
    cyclosporine" as a contraindication after any transplant: the condition comes first."""
    atorvastatin = going_home("a", "atorvastatin 40 MG Oral Tablet")
    (line,) = statin_lines(RECIPIENT, SIMVASTATIN, atorvastatin)
    assert (
        ": should it include cyclosporine, simvastatin is contraindicated and atorvastatin is to "
        "be avoided (myopathy" in line
    )


def test_tacrolimus_alone_asks_nothing_of_the_statin() -> None:
    tacrolimus = going_home("tac", "tacrolimus 1 MG Oral Capsule")
    assert statin_lines(RECIPIENT, SIMVASTATIN, tacrolimus) == []


def test_a_statin_with_no_transplant_on_record_asks_nothing() -> None:
    assert statin_lines(SIMVASTATIN) == []


def test_the_tables_statins_and_recipients_are_those_the_therapy_table_names() -> None:
    settings = PipelineSettings()
    interactions = table("statin_interactions", settings)
    expected = table("indicated_therapy", settings).extra["expected"]
    assert interactions.source and interactions.date
    recipients = expected[interactions.extra["recipients"]]
    assert "immunosuppressant" in recipients["groups"]
    statins = expected["myocardial infarction or coronary revascularization"]["groups"]["statin"]
    assert set(interactions.extra["statins"]) <= set(statins)
    assert set(interactions.extra["interacting"]) <= set(recipients["groups"]["immunosuppressant"])


def test_a_deployments_tables_that_disagree_are_a_clear_error() -> None:
    """A deployment may replace either table; a recipients rule the therapy table lacks is named,
    not a KeyError deep in a draft."""
    settings = PipelineSettings()
    interactions = table("statin_interactions", settings)
    renamed = replace(interactions, extra=interactions.extra | {"recipients": "organ graft"})
    with pytest.raises(ValueError, match="'organ graft' is no rule of the indicated_therapy"):
        transplant_statin_flags(
            state_of(RECIPIENT), [], table("indicated_therapy", settings), renamed
        )
