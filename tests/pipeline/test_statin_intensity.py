"""Two statins at discharge after atherosclerotic cardiovascular disease: the list never proposes
to stop the stronger one (2018 AHA/ACC cholesterol guideline), on hand-built records."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.clinical.statin_intensity import intensity
from pipeline.clinical.tables import table
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}
INFARCTION = fx.condition(
    "mi",
    "Acute non-ST segment elevation myocardial infarction (disorder)",
    encounter_id=None,
    onset="2003-07-18T06:00:00Z",
)


def ordered_in_stay(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


def drafted(*resources: dict[str, Any], born: str = "1950-06-15") -> Summary:
    record = fx.bundle(fx.patient() | {"birthDate": born}, fx.encounter(), *resources)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    return summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())


def medication_lines(summary: Summary) -> list[str]:
    return [s.text for s in summary.section("medications").sentences]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("atorvastatin 40 MG Oral Tablet", "high"),
        ("rosuvastatin calcium 20 MG Oral Tablet", "high"),
        ("Simvastatin 20 MG Oral Tablet", "moderate"),
        ("simvastatin 10 mg oral tablet", "low"),
        ("ezetimibe 10 MG / simvastatin 40 MG Oral Tablet", "moderate"),
        ("metoprolol tartrate 25 MG Oral Tablet", None),
        ("atorvastatin 5 MG Oral Tablet", None),
    ],
)
def test_a_statins_intensity_is_read_from_its_ingredient_and_strength(
    name: str, expected: str | None
) -> None:
    assert intensity(name, table("statin_intensity", PipelineSettings())) == expected


def test_after_an_infarction_the_stronger_statin_to_confirm_is_not_proposed_stopped() -> None:
    """Atorvastatin 40 mg, an old order to confirm, beside simvastatin 20 mg ordered in the stay:
    one Needs review line names each statin's intensity and asks which continues; the list
    proposes no stop, and the statin going home reads TO CONFIRM."""
    summary = drafted(
        INFARCTION,
        fx.old_order("atorva", "atorvastatin 40 MG Oral Tablet"),
        ordered_in_stay("simva", "Simvastatin 20 MG Oral Tablet"),
    )
    (line,) = [s for s in summary.section("needs_review").sentences if "statin" in s.text]
    assert line.text.startswith(
        "Statin choice at discharge (a high-intensity statin is indicated): atorvastatin 40 MG "
        "Oral Tablet (high intensity, to confirm); Simvastatin 20 MG Oral Tablet (moderate "
        "intensity, going home): atherosclerotic cardiovascular disease on record (Acute non-ST "
        "segment elevation myocardial infarction): confirm which statin continues"
    )
    assert [flag.code for flag in line.flags] == ["choice_in_doubt"]
    assert line.verdict == "supported"
    lines = medication_lines(summary)
    assert not any(text.startswith("PROPOSED STOP") for text in lines)
    assert any(text.startswith("NEW, TO CONFIRM: Simvastatin 20 MG") for text in lines)


def test_past_75_the_line_says_a_moderate_intensity_is_reasonable_too() -> None:
    """The guideline's recommendation 4.1.3: older than 75, moderate or high intensity is
    reasonable; the line says so with the age and asks for the intensity, not the stronger."""
    summary = drafted(
        INFARCTION,
        fx.old_order("atorva", "atorvastatin 40 MG Oral Tablet"),
        ordered_in_stay("simva", "Simvastatin 20 MG Oral Tablet"),
        born="1939-01-01",
    )
    (line,) = [s for s in summary.section("needs_review").sentences if "statin" in s.text]
    assert line.text.startswith(
        "Statin choice at discharge (a high-intensity statin is indicated, a moderate-intensity "
        "one reasonable at 85): "
    )
    assert line.text.endswith("confirm which statin continues, and at which intensity.")
    assert line.verdict == "supported"


@pytest.mark.parametrize(
    ("record", "stopped"),
    [
        # No atherosclerotic disease on record: the guideline's preference does not apply.
        (
            (
                fx.old_order("atorva", "atorvastatin 40 MG Oral Tablet"),
                ordered_in_stay("simva", "Simvastatin 20 MG Oral Tablet"),
            ),
            "atorvastatin 40 MG",
        ),
        # The weaker statin is the old one: stopping it keeps the stronger, as proposed before.
        (
            (
                INFARCTION,
                fx.old_order("simva", "Simvastatin 20 MG Oral Tablet"),
                ordered_in_stay("atorva", "atorvastatin 40 MG Oral Tablet"),
            ),
            "Simvastatin 20 MG",
        ),
    ],
)
def test_otherwise_a_statin_duplication_proposes_its_stop_as_any_duplication(
    record: tuple[dict[str, Any], ...], stopped: str
) -> None:
    summary = drafted(*record)
    assert not any("Statin choice" in s.text for s in summary.sentences())
    proposed = [t for t in medication_lines(summary) if t.startswith("PROPOSED STOP")]
    assert len(proposed) == 1 and stopped in proposed[0]
