"""The record pull asks a search to bring what its results reference (FHIR ``_include``) where
the EHR's CapabilityStatement offers it, instead of one read per reference; where it does not,
or its CapabilityStatement cannot be read, each reference is read as before."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import Sandbox
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import pull_record
from tests import fhir_fixtures as fx

STAY = {
    "resourceType": "Encounter",
    "id": "stay",
    "class": {"code": "IMP"},
    "subject": {"reference": "Patient/p1"},
    "period": {"start": "2024-03-01T08:00:00Z", "end": "2024-03-04T12:00:00Z"},
}
MEDICATION = {"resourceType": "Medication", "id": "m1", "code": {"text": "apixaban 5 MG"}}
ORDER = fx.order_by_reference(
    "o1", "Medication/m1", patient_id="p1", authored="2024-03-02T08:00:00Z"
)


def ehr(offers: bool, asked: list[httpx.URL], metadata_down: int = 0) -> httpx.MockTransport:
    """An EHR that answers ``_include`` as FHIR says (the referenced resources in the same
    bundle, search mode include), and says so in its CapabilityStatement when ``offers``; its
    CapabilityStatement answers 503 the first ``metadata_down`` times it is asked."""
    down = [metadata_down]

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url)
        path = request.url.path.removeprefix("/fhir/")
        if path == "metadata" and down[0] > 0:
            down[0] -= 1
            return httpx.Response(503, json={"resourceType": "OperationOutcome"})
        if path == "metadata":
            includes = ["MedicationRequest:medication"] if offers else []
            rest = [
                {
                    "mode": "server",
                    "resource": [{"type": "MedicationRequest", "searchInclude": includes}],
                }
            ]
            return httpx.Response(200, json={"resourceType": "CapabilityStatement", "rest": rest})
        if path in ("Patient/p1", "Encounter/stay", "Medication/m1"):
            found = {
                "Patient/p1": fx.patient("p1"),
                "Encounter/stay": STAY,
                "Medication/m1": MEDICATION,
            }
            return httpx.Response(200, json=found[path])
        entries: list[dict[str, Any]] = []
        if path == "Encounter":
            entries = [{"resource": STAY}]
        if path == "MedicationRequest":
            entries = [{"resource": ORDER, "search": {"mode": "match"}}]
            if request.url.params.get("_include") == "MedicationRequest:medication":
                entries.append({"resource": MEDICATION, "search": {"mode": "include"}})
        return httpx.Response(
            200, json={"resourceType": "Bundle", "type": "searchset", "entry": entries}
        )

    return httpx.MockTransport(answer)


def pulled(
    base: str, offers: bool, transport: httpx.MockTransport | None = None
) -> tuple[dict[str, Any], list[httpx.URL]]:
    asked: list[httpx.URL] = []

    async def pull() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=transport or ehr(offers, asked)) as http:
            return await pull_record(FhirClient(base, http, backoff_s=0.01), "p1", "stay")

    return asyncio.run(pull()), asked


def keys(bundle: dict[str, Any]) -> set[str]:
    return {f"{e['resource']['resourceType']}/{e['resource'].get('id')}" for e in bundle["entry"]}


def test_an_offered_include_brings_the_medication_with_its_order_and_saves_the_read() -> None:
    bundle, asked = pulled("http://offers.example/fhir", offers=True)
    assert "Medication/m1" in keys(bundle)
    orders = [url for url in asked if url.path.endswith("/MedicationRequest")]
    assert orders and all(
        url.params.get("_include") == "MedicationRequest:medication" for url in orders
    )
    assert not [url for url in asked if url.path.endswith("/Medication/m1")]


def test_without_the_offer_the_pull_reads_the_reference_and_never_asks_an_include() -> None:
    bundle, asked = pulled("http://plain.example/fhir", offers=False)
    assert "Medication/m1" in keys(bundle)
    assert not [url for url in asked if "_include" in url.params]
    assert [url for url in asked if url.path.endswith("/Medication/m1")]


def test_the_capability_statement_is_read_once_per_ehr() -> None:
    _, first = pulled("http://once.example/fhir", offers=True)
    _, second = pulled("http://once.example/fhir", offers=True)
    assert [u.path for u in first].count("/fhir/metadata") == 1
    assert [u.path for u in second].count("/fhir/metadata") == 0


def test_a_capability_statement_that_is_down_is_asked_again_at_the_next_pull() -> None:
    """A 503 is a fault that may pass: that pull reads each reference, and the next one asks
    again and takes the offer."""
    asked: list[httpx.URL] = []
    flaky = ehr(True, asked, metadata_down=100)
    first, _ = pulled("http://flaky.example/fhir", True, flaky)
    assert "Medication/m1" in keys(first)
    assert not [url for url in asked if "_include" in url.params]
    asked.clear()
    _, _ = pulled("http://flaky.example/fhir", True, ehr(True, asked))
    assert [url.path for url in asked].count("/fhir/metadata") == 1
    assert any(url.params.get("_include") == "MedicationRequest:medication" for url in asked)


def test_the_sandbox_offers_the_include_and_answers_it(sandbox: Sandbox) -> None:
    """Against Medplum: a medication coded as a resource comes with its order's search."""
    patient, stay_id = "include-patient", "include-stay"
    admin = {"x-admin-token": sandbox.admin_token}
    medication = MEDICATION | {"id": "include-medication"}
    order = ORDER | {
        "id": "include-order",
        "subject": {"reference": f"Patient/{patient}"},
        "encounter": {"reference": f"Encounter/{stay_id}"},
        "medicationReference": {"reference": f"Medication/{medication['id']}"},
    }
    for resource in (
        fx.patient(patient),
        fx.encounter(stay_id, "2024-03-01T08:00:00Z", "2024-03-04T12:00:00Z", patient_id=patient),
        medication,
        order,
    ):
        url = f"{sandbox.fhir_base}/{resource['resourceType']}/{resource['id']}"
        httpx.put(url, json=resource, headers=admin).raise_for_status()
    asked: list[httpx.URL] = []
    token = sandbox.auth.access_token("tests", "patient/*.rs", LaunchContext(f"Patient/{patient}"))

    async def record(request: httpx.Request) -> None:
        asked.append(request.url)

    async def pull() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=30, event_hooks={"request": [record]}) as http:

            async def bearer(refresh: bool) -> str | None:
                return token

            return await pull_record(FhirClient(sandbox.fhir_base, http, bearer), patient, stay_id)

    bundle = asyncio.run(pull())
    assert f"Medication/{medication['id']}" in keys(bundle)
    assert not [url for url in asked if url.path.endswith(f"/Medication/{medication['id']}")]
    assert any(url.params.get("_include") == "MedicationRequest:medication" for url in asked)
