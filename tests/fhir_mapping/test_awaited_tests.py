"""Pending results: a test the stay ordered that nothing answers yet, a report still preliminary,
or, where the record holds neither, a line that says so (hand-written FHIR)."""

from __future__ import annotations

from typing import Any

from fhir_mapping.awaited_tests import OPEN_ORDER
from pipeline.evidence.model import PendingResultAttributes, attributes_as
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

LABORATORY = {"coding": [{"system": "http://snomed.info/sct", "code": "108252007"}]}
REFERRAL = {"coding": [{"system": "http://snomed.info/sct", "code": "3457005"}]}
NONE_PENDING = (
    "None in the record: no test of this stay awaits its result (no report is preliminary, no "
    "test order is open)."
)


def ordered_test(
    request_id: str,
    name: str,
    *,
    status: str = "active",
    intent: str = "order",
    category: dict[str, Any] = LABORATORY,
    authored: str = "2024-03-02T08:00:00+00:00",
) -> dict[str, Any]:
    """A ServiceRequest of the stay's encounter."""
    return {
        "resourceType": "ServiceRequest",
        "id": request_id,
        "status": status,
        "intent": intent,
        "category": [category],
        "code": {"text": name},
        "subject": {"reference": f"Patient/{fx.PATIENT_ID}"},
        "encounter": {"reference": f"Encounter/{fx.ENCOUNTER_ID}"},
        "authoredOn": authored,
    }


def pending_lines(record: dict[str, Any]) -> list[str]:
    summary = summarize_evidence(
        evidence_from_fhir(record, settings=PipelineSettings()),
        salience=lambda text: ([], []),
        settings=PipelineSettings(),
    )
    return [s.text for s in summary.section("pending_results").sentences]


def test_a_test_ordered_in_the_stay_that_nothing_answers_is_a_pending_result() -> None:
    state = evidence_from_fhir(
        fx.stay(ordered_test("culture", "Blood culture")), settings=PipelineSettings()
    )
    (pending,) = state.facts["pending_result"]
    attributes = attributes_as(pending, PendingResultAttributes)
    assert (attributes.name, attributes.status) == ("Blood culture", OPEN_ORDER)
    assert [ref.resource for ref in pending.sources] == ["ServiceRequest/culture"]
    assert pending_lines(fx.stay(ordered_test("culture", "Blood culture"))) == [
        "Blood culture: ordered in the stay, no result in the record, ordered 2024-03-02."
    ]


def test_an_order_a_report_or_an_observation_answers_is_not_pending() -> None:
    report = fx.diagnostic_report("r1", "final", ["o1"], name="Basic metabolic panel") | {
        "basedOn": [{"reference": "ServiceRequest/panel"}]
    }
    glucose = fx.observation("o1", "Glucose", 98, "mg/dL")
    troponin = fx.observation("o2", "Troponin I", 0.01, "ng/mL") | {
        "basedOn": [{"reference": "ServiceRequest/troponin"}]
    }
    record = fx.stay(
        ordered_test("panel", "Basic metabolic panel"),
        ordered_test("troponin", "Troponin I"),
        report,
        glucose,
        troponin,
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    assert state.facts["pending_result"] == []
    assert pending_lines(record) == [NONE_PENDING]


def test_a_plan_a_closed_order_a_referral_or_another_stays_order_is_no_pending_result() -> None:
    record = fx.stay(
        ordered_test("planned", "Lipid panel", intent="plan"),
        ordered_test("done", "Lipid panel", status="completed"),
        ordered_test("revoked", "HbA1c", status="revoked"),
        ordered_test("referral", "Referral to cardiology", category=REFERRAL),
        ordered_test("last-year", "Ferritin", authored="2023-03-02T08:00:00+00:00")
        | {"encounter": {"reference": "Encounter/clinic"}},
    )
    state = evidence_from_fhir(record, settings=PipelineSettings())
    assert state.facts["pending_result"] == []


def test_a_preliminary_report_is_said_and_the_none_line_is_not() -> None:
    record = fx.stay(
        fx.observation("o1", "Blood culture", 0, "1", status="preliminary"),
        fx.diagnostic_report("r1", "preliminary", ["o1"], name="Blood culture"),
    )
    assert pending_lines(record) == ["Blood culture: preliminary, ordered 2024-03-02."]


def test_a_stay_with_no_report_and_no_open_order_says_none_is_awaited() -> None:
    """ "Not documented: Pending results" sent readers to look for what the record does say:
    its reports and orders were read, and nothing awaits a result."""
    summary = summarize_evidence(
        evidence_from_fhir(fx.stay(), settings=PipelineSettings()),
        salience=lambda text: ([], []),
        settings=PipelineSettings(),
    )
    (line,) = summary.section("pending_results").sentences
    assert line.text == NONE_PENDING and line.citations
    assert not any("Pending results" in s.text for s in summary.section("needs_review").sentences)
