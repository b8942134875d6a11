"""The day's opioid dose in morphine equivalents (CDC 2022 table), on hand-built records: the
rescue drug is asked for from the table's line, counted from each order's dose and frequency,
or, for a home drug with no order, from its last prescription; never below the line, never
when a rescue drug goes home."""

from __future__ import annotations

from typing import Any

from fhir.resources.R4B.dosage import Dosage

from fhir_mapping.dosage import units_per_day
from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.conftest import needs_review_line

OPIOID_LINE = "the day's dose from which the CDC opioid guideline offers an overdose rescue drug"


def going_home(request_id: str, name: str, per_day: int = 1) -> dict[str, Any]:
    return fx.medication_request(
        request_id, name, encounter_id=fx.ENCOUNTER_ID, dose="1 tablet", frequency=(per_day, 1, "d")
    )


def asked(*resources: dict[str, Any]) -> list[str]:
    state: EvidenceState = evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())
    return [f.reason for f in state.flags_for_review if OPIOID_LINE in f.reason]


def test_the_units_a_day_are_the_dose_times_the_frequency_over_the_period() -> None:
    twice_a_day = {"doseAndRate": [{"doseQuantity": {"value": 2}}]} | {
        "timing": {"repeat": {"frequency": 2, "period": 1, "periodUnit": "d"}}
    }
    every_four_hours = {"doseAndRate": [{"doseQuantity": {"value": 1}}]} | {
        "timing": {"repeat": {"frequency": 1, "period": 4, "periodUnit": "h"}}
    }
    assert units_per_day(Dosage.model_validate(twice_a_day)) == 4
    assert units_per_day(Dosage.model_validate(every_four_hours)) == 6
    assert units_per_day(Dosage.model_validate({"text": "as directed"})) is None


def test_oxycodone_four_times_a_day_reaches_the_line_and_asks_for_the_rescue_drug() -> None:
    """10 mg four times a day: 40 mg, 60 MME (factor 1.5), at or above 50."""
    oxycodone = going_home("oxy", "oxycodone hydrochloride 10 MG Oral Tablet", per_day=4)
    (line,) = asked(oxycodone)
    assert line == (
        "Opioids going home or at home: about 60 morphine milligram equivalents a day, counted "
        "from their orders or last prescriptions, at or above the day's dose from which the CDC "
        "opioid guideline offers an overdose rescue drug: oxycodone hydrochloride 10 MG Oral "
        "Tablet; no naloxone or other rescue drug going home: confirm the doses and the rescue "
        "drug, or say why not"
    )
    assert asked(going_home("low", "oxycodone hydrochloride 5 MG Oral Tablet")) == []
    naloxone = going_home("nlx", "naloxone hydrochloride 4 MG/ACTUAT Nasal Spray")
    assert asked(oxycodone, naloxone) == []


def test_a_combination_counts_its_opioid_and_a_patch_its_micrograms_an_hour() -> None:
    """Acetaminophen 325 mg / oxycodone 5 mg twice a day is 15 MME: below the line; a 25
    microgram-an-hour fentanyl patch is 60 MME whatever the days between patches."""
    combination = going_home(
        "perc", "acetaminophen 325 MG / oxycodone hydrochloride 5 MG Oral Tablet", per_day=2
    )
    assert asked(combination) == []
    patch = going_home("patch", "72 HR fentanyl 0.025 MG/HR Transdermal System")
    assert len(asked(patch)) == 1
    (both,) = asked(combination, patch)
    assert "about 75 morphine milligram equivalents a day" in both


def test_the_total_is_a_computed_fact_the_line_cites_and_the_checker_verifies() -> None:
    """MA-RAG: the sum is no value of any order, so it is a fact computed in code, with the
    sources of the orders it was counted from; the Needs review line cites it, and the checker
    finds every number of the line in what it cites: the line passes unflagged, and a line
    saying another total would not."""
    from pipeline.checking.checker import check_summary_sentences

    oxycodone = going_home("oxy", "oxycodone hydrochloride 10 MG Oral Tablet", per_day=4)
    state = evidence_from_fhir(fx.stay(oxycodone), settings=PipelineSettings())
    (total,) = state.facts["computed"]
    assert (total.attributes.name, str(total.attributes.value)) == ("opioid dose a day", "60")
    assert [ref.resource for ref in total.sources] == ["MedicationRequest/oxy"]
    line = needs_review_line(state, OPIOID_LINE)
    assert total.id in line.citations
    assert line.verdict == "supported"
    wrong = line.model_copy(update={"text": line.text.replace("about 60", "about 90")})
    (checked,) = check_summary_sentences([wrong], state)
    assert checked.verdict == "unsupported"


def test_a_home_drug_with_no_order_is_counted_from_its_last_prescription() -> None:
    """The H&P lists oxycodone 10 mg with no order; the prescription of the autumn said one
    tablet four times a day: 60 MME, asked. With no prescription, no dose: nothing to count."""
    hp = fx.document_reference(
        "hp", fx.attachment("# Medications\noxycodone hydrochloride 10 mg oral tablet\n")
    )
    autumn = fx.medication_request(
        "autumn",
        "oxycodone hydrochloride 10 MG Oral Tablet",
        status="completed",
        authored="2023-10-01",
        dose="1 tablet",
        frequency=(4, 1, "d"),
    )
    assert len(asked(hp, autumn)) == 1
    assert asked(hp) == []
