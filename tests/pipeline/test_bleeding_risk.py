"""High bleeding risk on two antiplatelets or more, by the ARC-HBR criteria, on hand-built
records: one major criterion or two minor ones make the line; one minor criterion alone does
not, unless it is anaemia standing in for a haemoglobin never measured, which the line asks
for."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


DUAL = (
    going_home("a", "aspirin 81 MG Oral Tablet"),
    going_home("c", "clopidogrel 75 MG Oral Tablet"),
)


def high_bleeding_risk(*resources: dict[str, Any], born: str = "1950-06-15") -> list[str]:
    record = fx.bundle(fx.patient() | {"birthDate": born}, fx.encounter(), *resources)
    state: EvidenceState = evidence_from_fhir(record, settings=PipelineSettings())
    return [f.reason for f in state.flags_for_review if "ARC-HBR" in f.reason]


def haemoglobin(value: float) -> dict[str, Any]:
    return fx.observation("hb", "Hemoglobin", value, "g/dL", loinc="718-7")


def test_an_active_cancer_is_a_major_criterion_and_makes_the_line_alone() -> None:
    """ARC-HBR's active malignancy: diagnosed within the 12 months before admission."""
    cancer = fx.condition(
        "ca", "Malignant neoplasm of breast (disorder)", encounter_id=None, onset="2023-08-26"
    )
    assert high_bleeding_risk(cancer, *DUAL) == [
        "High bleeding risk (ARC-HBR) on two antiplatelets at discharge, aspirin 81 MG Oral "
        "Tablet; clopidogrel 75 MG Oral Tablet: major: active malignancy: Malignant neoplasm of "
        "breast (since 2023-08-26): confirm the combination and set its duration; no proton "
        "pump inhibitor going home, which protects the stomach on dual antiplatelet therapy at "
        "high bleeding risk: add one, or say why not"
    ]
    # One antiplatelet alone is no dual therapy to shorten.
    assert high_bleeding_risk(cancer, DUAL[0]) == []


def test_a_proton_pump_inhibitor_going_home_answers_the_lines_gastric_protection() -> None:
    """2023 ESC ACS guideline: a PPI with dual antiplatelet therapy at high risk of
    gastrointestinal bleeding (class I). With one going home, the line asks only for the
    combination and its duration."""
    cancer = fx.condition(
        "ca", "Malignant neoplasm of breast (disorder)", encounter_id=None, onset="2023-08-26"
    )
    protected = going_home("pp", "omeprazole 20 MG Delayed Release Oral Capsule")
    (line,) = high_bleeding_risk(cancer, *DUAL, protected)
    assert line.endswith("confirm the combination and set its duration")


def test_the_line_counts_the_antiplatelets_going_home() -> None:
    """Aspirin, clopidogrel and prasugrel are three antiplatelets: a reader called "two" a
    contradiction of the three drugs the line itself names."""
    cancer = fx.condition(
        "ca", "Malignant neoplasm of breast (disorder)", encounter_id=None, onset="2023-08-26"
    )
    (line,) = high_bleeding_risk(cancer, *DUAL, going_home("p", "prasugrel 10 MG Oral Tablet"))
    assert line.startswith("High bleeding risk (ARC-HBR) on three antiplatelets at discharge, ")


def test_a_cancer_coded_decades_ago_and_still_active_is_no_active_malignancy() -> None:
    """A 1978 breast cancer still "active" in the record, with no sign of treatment, is not
    ARC-HBR's active malignancy (a reader named the 1995 line's major criterion unshown)."""
    cancer = fx.condition(
        "ca", "Malignant neoplasm of breast (disorder)", encounter_id=None, onset="1978-08-26"
    )
    assert high_bleeding_risk(cancer, *DUAL) == []


def test_a_cancer_in_the_past_is_no_criterion() -> None:
    past = fx.condition(
        "ca", "History of malignant neoplasm of breast", encounter_id=None, onset="1978-08-26"
    )
    assert high_bleeding_risk(past, *DUAL) == []


def test_two_minor_criteria_make_the_line_and_one_does_not() -> None:
    """Age 80 is one minor criterion; a haemoglobin of 11.5 g/dL in a woman (below 12) is the
    second; 12.5 g/dL is not."""
    old = "1944-01-01"
    assert high_bleeding_risk(*DUAL, haemoglobin(12.5), born=old) == []
    (line,) = high_bleeding_risk(*DUAL, haemoglobin(11.5), born=old)
    assert "minor: Hemoglobin 11.5 g/dL on 2024-03-02; minor: age 80" in line


def test_a_haemoglobin_below_11_is_major() -> None:
    (line,) = high_bleeding_risk(*DUAL, haemoglobin(9.8))
    assert "major: Hemoglobin 9.8 g/dL on 2024-03-02" in line


def test_anaemia_on_the_problem_list_stands_for_an_unmeasured_haemoglobin() -> None:
    anaemia = fx.condition("an", "Anemia (disorder)", encounter_id=None, onset="1978-11-09")
    (line,) = high_bleeding_risk(anaemia, *DUAL, born="1944-01-01")
    assert "minor: Anemia on the problem list (since 1978-11-09), no haemoglobin in this stay" in (
        line
    )
    assert "; measure the haemoglobin: below eleven g/dL it is a major criterion" in line
    # Measured, the value decides: a normal haemoglobin leaves age as the only criterion.
    assert high_bleeding_risk(anaemia, *DUAL, haemoglobin(13.5), born="1944-01-01") == []


def test_anaemia_with_no_haemoglobin_asks_for_it_below_the_criteria_count() -> None:
    """Anaemia on the list is one minor criterion, too few for the line; but the haemoglobin the
    stay never measured could be a major one on its own (ARC-HBR: below 11 g/dL), so the line
    asks for it. Two readers of infarction stays asked for that haemoglobin."""
    anaemia = fx.condition("an", "Anemia (disorder)", encounter_id=None, onset="1978-11-09")
    assert high_bleeding_risk(anaemia, *DUAL) == [
        "Two antiplatelets at discharge, aspirin 81 MG Oral Tablet; clopidogrel 75 MG Oral "
        "Tablet, with Anemia on the problem list (since 1978-11-09), no haemoglobin in this "
        "stay: measure the haemoglobin before the combination and its duration are set: below "
        "eleven g/dL it is a major criterion of high bleeding risk on its own (ARC-HBR)"
    ]
    assert high_bleeding_risk(anaemia, *DUAL, haemoglobin(12.8)) == []
    assert high_bleeding_risk(*DUAL) == []


def test_advanced_kidney_disease_on_the_problem_list_stands_for_an_unmeasured_egfr() -> None:
    ckd = fx.condition(
        "ckd", "Chronic kidney disease stage 4 (disorder)", encounter_id=None, onset="2015-01-01"
    )
    (line,) = high_bleeding_risk(ckd, *DUAL)
    assert "major: Chronic kidney disease stage 4 on the problem list (since 2015-01-01), " in line
    assert "no eGFR in this stay" in line
    measured = fx.observation("egfr", "eGFR", 45, "mL/min/{1.73_m2}", loinc="33914-3")
    (line,) = high_bleeding_risk(ckd, *DUAL, measured, born="1944-01-01")
    assert "minor: eGFR 45 mL/min/{1.73_m2} on 2024-03-02; minor: age 80" in line


def test_an_antiplatelet_to_confirm_is_counted_apart_from_those_going_home() -> None:
    """A 1997 clopidogrel order to confirm beside aspirin and prasugrel started in the stay: the
    list proposes the old order stopped, so "three antiplatelets at discharge" contradicted it
    (a reader's finding); the line counts the two going home and the third conditionally."""
    old = fx.medication_request(
        "c",
        "Clopidogrel 75 MG Oral Tablet",
        authored="1997-12-09",
        **FULL,  # type: ignore[arg-type]
    )
    started = (
        going_home("a", "aspirin 81 MG Oral Tablet"),
        going_home("p", "prasugrel 10 MG Oral Tablet"),
    )
    (line,) = high_bleeding_risk(old, *started, haemoglobin(11.5), born="1944-01-01")
    assert line.startswith(
        "High bleeding risk (ARC-HBR) on two antiplatelets at discharge, aspirin 81 MG Oral "
        "Tablet; prasugrel 10 MG Oral Tablet, three if Clopidogrel 75 MG Oral Tablet, to "
        "confirm, continues: "
    )
