"""Medication reconciliation and conflict detection, on hand-written FHIR fixtures."""

from __future__ import annotations

import pytest

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

BEFORE = "2023-09-01T00:00:00+00:00"  # within the 12-month renewal window


def home(request_id: str, name: str, **kwargs: object) -> dict:
    """A medication ordered before admission (home medication)."""
    return fx.medication_request(request_id, name, authored=BEFORE, **kwargs)


def discharge(request_id: str, name: str, **kwargs: object) -> dict:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **kwargs)


def changes(state: EvidenceState) -> dict[str, tuple[str, list[str]]]:
    return {c.name: (c.kind, c.differences) for c in state.medications.changes}


def flag_codes(state: EvidenceState) -> list[str]:
    return sorted(flag.code for flag in state.flags_for_review)


FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def test_new_stopped_continued_and_changed() -> None:
    state = evidence_from_fhir(
        fx.stay(
            home("a", "aspirin 81 MG Oral Tablet", **FULL),
            home(
                "s",
                "ibuprofen 200 MG Oral Tablet",
                status="completed",
                validity_end="2024-03-03T00:00:00+00:00",
                **FULL,
            ),
            home("l", "lisinopril 10 MG Oral Tablet", **FULL),
            discharge("l2", "lisinopril 20 MG Oral Tablet", reason="BP above target", **FULL),
            discharge("n", "atorvastatin 40 MG Oral Tablet", **FULL),
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {
        "aspirin 81 MG Oral Tablet": ("continued", []),
        "ibuprofen 200 MG Oral Tablet": ("stopped", []),
        "lisinopril 20 MG Oral Tablet": ("changed", ["strength: 10 MG → 20 MG"]),
        "atorvastatin 40 MG Oral Tablet": ("new", []),
    }
    assert set(state.medications.discharge) == {
        fact.id
        for fact in state.facts["medication"]
        if fact.attributes.name.startswith(("aspirin", "lisinopril 20", "atorvastatin"))
    }
    unexplained = [f for f in state.flags_for_review if f.code == "unexplained_medication_change"]
    assert [flag.reason for flag in unexplained] == [
        "ibuprofen 200 MG Oral Tablet: stopped, with no documented reason"
    ]


def test_units_and_spelling_are_normalised_before_comparing() -> None:
    state = evidence_from_fhir(
        fx.stay(
            home("a", "Metoprolol 25mg", code="1", route="PO", **fx.TWICE_DAILY),
            discharge("b", "metoprolol 25 mg", code="2", route="Oral", **fx.TWICE_DAILY),
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {"metoprolol 25 mg": ("continued", [])}


def test_matching_uses_the_rxnorm_code_first() -> None:
    state = evidence_from_fhir(
        fx.stay(
            home("a", "Brand X", code="197361", **FULL),
            discharge("b", "amlodipine 5 MG", code="197361", route="oral", **fx.TWICE_DAILY),
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {
        "amlodipine 5 MG": ("changed", ["frequency: once daily → twice daily"])
    }
    assert "unexplained_medication_change" in flag_codes(state)


def test_documented_reason_is_not_flagged() -> None:
    state = evidence_from_fhir(
        fx.stay(
            home("a", "furosemide 20 MG", **FULL),
            discharge("b", "furosemide 40 MG", reason="fluid overload", **FULL),
        ),
        settings=PipelineSettings(),
    )
    (change,) = state.medications.changes
    assert (change.kind, change.reason) == ("changed", "fluid overload")
    assert "unexplained_medication_change" not in flag_codes(state)


def test_medication_missing_dose_frequency_or_route_is_flagged() -> None:
    state = evidence_from_fhir(
        fx.stay(discharge("a", "aspirin 81 MG", dose="1 tablet")), settings=PipelineSettings()
    )
    (flag,) = [f for f in state.flags_for_review if f.code == "incomplete_medication"]
    assert flag.reason == "aspirin 81 MG: frequency, route not documented"


def test_phase_unknown_is_flagged_not_guessed() -> None:
    state = evidence_from_fhir(
        fx.stay(fx.medication_request("a", "aspirin", authored=None, **FULL)),
        settings=PipelineSettings(),
    )
    assert flag_codes(state) == ["medication_phase_unknown"]
    assert state.medications.admission == [] and state.medications.discharge == []


# --- conflicts -----------------------------------------------------------------------------------


def conflict_kinds(state: EvidenceState) -> list[str]:
    return sorted(conflict.kind for conflict in state.conflicts)


def test_one_drug_with_two_active_doses_is_a_conflict() -> None:
    state = evidence_from_fhir(
        fx.stay(
            discharge("a", "warfarin 5 MG", **FULL),
            discharge("b", "Warfarin 2 MG", **FULL),
        ),
        settings=PipelineSettings(),
    )
    assert conflict_kinds(state) == ["duplicate_active_medication"]
    assert "conflict" in flag_codes(state)


def test_same_dose_twice_is_not_a_conflict() -> None:
    state = evidence_from_fhir(
        fx.stay(discharge("a", "warfarin 5 MG", **FULL), discharge("b", "Warfarin 5mg", **FULL)),
        settings=PipelineSettings(),
    )
    assert state.conflicts == []


def test_prescribed_drug_matching_an_allergy_is_a_conflict() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.allergy("al", "Penicillin V (substance)"),
            discharge("m", "penicillin V potassium 250 MG Oral Tablet", **FULL),
        ),
        settings=PipelineSettings(),
    )
    (conflict,) = state.conflicts
    assert conflict.kind == "medication_allergy"
    assert "Penicillin V (substance)" in conflict.description


def test_unrelated_allergy_is_not_a_conflict() -> None:
    state = evidence_from_fhir(
        fx.stay(fx.allergy("al", "Latex"), discharge("m", "aspirin 81 MG", **FULL)),
        settings=PipelineSettings(),
    )
    assert state.conflicts == []


def test_condition_both_active_and_resolved_is_a_conflict() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.condition("c1", "Atrial fibrillation", code="49436004"),
            fx.condition(
                "c2",
                "Atrial fibrillation",
                code="49436004",
                clinical="resolved",
                abatement="2024-03-04T00:00:00+00:00",
            ),
        ),
        settings=PipelineSettings(),
    )
    assert conflict_kinds(state) == ["condition_status"]


@pytest.mark.parametrize(("second", "expected"), [(5.4, ["lab_value"]), (4.1, [])])
def test_one_lab_at_one_time_with_two_values_is_a_conflict(
    second: float, expected: list[str]
) -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.observation("o1", "Potassium", 4.1, "mmol/L", loinc="2823-3"),
            fx.observation("o2", "Potassium", second, "mmol/L", loinc="2823-3"),
        ),
        settings=PipelineSettings(),
    )
    assert conflict_kinds(state) == expected


def test_conflicts_are_flagged_not_resolved() -> None:
    state = evidence_from_fhir(
        fx.stay(discharge("a", "warfarin 5 MG", **FULL), discharge("b", "warfarin 2 MG", **FULL)),
        settings=PipelineSettings(),
    )
    assert {f.attributes.name for f in state.facts["medication"]} == {
        "warfarin 5 MG",
        "warfarin 2 MG",
    }
    assert len(state.medications.discharge) == 2


def test_no_known_allergies_beside_a_documented_allergy_is_a_conflict() -> None:
    note = "# Allergies\nNo Known Allergies.\n"
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(note)), fx.allergy("a1", "Latex")),
        settings=PipelineSettings(),
    )
    (conflict,) = state.conflicts
    assert conflict.kind == "allergy_status"
    assert conflict.description == "the record lists Latex, and also says 'No Known Allergies'"
    assert len(conflict.fact_ids) == 2


# --- orders last written long before the stay ---------------------------------------------------

LONG_AGO = "1997-12-09T00:00:00+00:00"


def medication_lines(state: EvidenceState) -> list[str]:
    from pipeline.summarizing.evidence_summary import summarize_evidence

    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return [sentence.text for sentence in summary.section("medications").sentences]


def test_an_order_not_renewed_for_years_and_unmentioned_is_to_confirm_never_continued() -> None:
    """A 1997 prasugrel order still "active" in 2024 says what the EHR last recorded, not what
    the patient takes: it is listed once, with its date, and flagged once."""
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request(
                "old-1", "prasugrel 10 MG Oral Tablet", authored=LONG_AGO, **FULL
            ),
            fx.medication_request(
                "old-2", "metoprolol succinate 100 MG", authored=LONG_AGO, **FULL
            ),
            home("recent", "aspirin 81 MG Oral Tablet", **FULL),
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {
        "prasugrel 10 MG Oral Tablet": ("unconfirmed", []),
        "metoprolol succinate 100 MG": ("unconfirmed", []),
        "aspirin 81 MG Oral Tablet": ("continued", []),
    }
    lines = medication_lines(state)
    assert (
        "Last ordered long before this stay, not renewed, and not mentioned in its notes (confirm "
        "whether still taken): prasugrel 10 MG Oral Tablet (last ordered 1997-12-09); metoprolol "
        "succinate 100 MG (last ordered 1997-12-09)."
    ) in lines
    assert not any(line.startswith("CONTINUED: prasugrel") for line in lines)
    assert flag_codes(state).count("medication_not_renewed") == 1
    assert "no_discharge_medications" not in flag_codes(state)  # aspirin goes home


def test_an_old_order_the_stays_note_mentions_is_continued() -> None:
    note = fx.document_reference(
        "note", fx.attachment("Medications: prasugrel 10 mg daily, unchanged.")
    )
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("old", "prasugrel 10 MG Oral Tablet", authored=LONG_AGO, **FULL),
            note,
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {"prasugrel 10 MG Oral Tablet": ("continued", [])}
    assert "medication_not_renewed" not in flag_codes(state)


def test_the_renewal_window_is_a_setting() -> None:
    from pipeline.settings import PipelineSettings

    record = fx.stay(
        fx.medication_request("old", "prasugrel 10 MG Oral Tablet", authored=LONG_AGO, **FULL)
    )
    wide = PipelineSettings(medication_renewal_window_days=365 * 30)
    assert changes(evidence_from_fhir(record, settings=wide)) == {
        "prasugrel 10 MG Oral Tablet": ("continued", [])
    }
    assert changes(evidence_from_fhir(record, settings=PipelineSettings())) == {
        "prasugrel 10 MG Oral Tablet": ("unconfirmed", [])
    }


def test_the_agent_loop_a_model_draft_reruns_keeps_the_deployments_window() -> None:
    from datetime import timedelta

    from pipeline.clinical.agent import run_agent_loop
    from pipeline.settings import PipelineSettings
    from pipeline.summarizing.agentic import LoopSettings

    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("old", "prasugrel 10 MG Oral Tablet", authored=LONG_AGO, **FULL)
        ),
        settings=PipelineSettings(),
    )
    loop = LoopSettings.from_settings(PipelineSettings(medication_renewal_window_days=365 * 30))
    window = timedelta(days=loop.renewal_window_days)
    rerun = run_agent_loop(state, state.step_count + 12, renewal_window=window)
    assert changes(rerun) == {"prasugrel 10 MG Oral Tablet": ("continued", [])}


def test_orders_to_confirm_are_flagged_once_not_again_as_incomplete_or_left_out() -> None:
    note = fx.document_reference(
        "note", fx.attachment("# Medications\nNo Active Medications.\n\n# Plan\nRest.\n")
    )
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("old", "prasugrel 10 MG Oral Tablet", authored=LONG_AGO), note
        ),
        settings=PipelineSettings(),
    )
    assert changes(state) == {"prasugrel 10 MG Oral Tablet": ("unconfirmed", [])}
    assert flag_codes(state) == ["medication_not_renewed"]


def test_a_renewal_of_a_drug_ordered_within_the_window_is_continued_not_new() -> None:
    """Yearly renewals: last year's order was completed when this stay's order replaced it."""

    def record(earlier: str) -> dict:
        before = fx.medication_request(
            "last-year",
            "lisinopril 10 MG Oral Tablet",
            code="314076",
            status="completed",
            authored=earlier,
            **FULL,
        )
        renewed = discharge("renewed", "lisinopril 10 MG Oral Tablet", code="314076", **FULL)
        return fx.stay(before, renewed)

    assert changes(
        evidence_from_fhir(record("2023-12-01T00:00:00+00:00"), settings=PipelineSettings())
    ) == {"lisinopril 10 MG Oral Tablet": ("continued", [])}
    assert changes(
        evidence_from_fhir(record("2020-12-01T00:00:00+00:00"), settings=PipelineSettings())
    ) == {"lisinopril 10 MG Oral Tablet": ("new", [])}
    lines = medication_lines(
        evidence_from_fhir(record("2023-12-01T00:00:00+00:00"), settings=PipelineSettings())
    )
    assert any(line.startswith("CONTINUED: lisinopril 10 MG Oral Tablet") for line in lines)
