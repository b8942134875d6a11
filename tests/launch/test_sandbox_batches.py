"""The sandbox EHR's FHIR server answers an app's batch only when it is what a relaunch asks: GET
searches of types the token may search, counted only, inside the patient in context. Any other
batch needs the admin token, as before: a batch must never be a way around the scopes."""

from __future__ import annotations

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import Sandbox

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
OTHER = "97da660e-b895-3740-a6fc-f8cb48dcf20c"


def _batch(sandbox: Sandbox, *urls: str) -> httpx.Response:
    token = sandbox.auth.access_token(
        "provenote", "patient/*.rs", LaunchContext(f"Patient/{PATIENT}")
    )
    bundle = {
        "resourceType": "Bundle",
        "type": "batch",
        "entry": [{"request": {"method": "GET", "url": url}} for url in urls],
    }
    return httpx.post(
        f"{sandbox.fhir_base}",
        json=bundle,
        headers={"authorization": f"Bearer {token}", "content-type": "application/fhir+json"},
    )


def test_a_count_only_batch_of_the_patients_searches_is_answered(sandbox: Sandbox) -> None:
    answer = _batch(
        sandbox,
        f"Patient?_id={PATIENT}&_summary=count",
        f"Condition?patient=Patient/{PATIENT}&_summary=count",
    )
    assert answer.status_code == 200, answer.text
    totals = [entry["resource"]["total"] for entry in answer.json()["entry"]]
    assert totals[0] == 1 and totals[1] > 0


def test_any_other_batch_with_an_app_token_is_refused(sandbox: Sandbox) -> None:
    for urls in (
        (f"Condition?patient=Patient/{PATIENT}",),  # resources, not a count
        (f"Condition?patient=Patient/{OTHER}&_summary=count",),  # another patient
        ("Condition?_summary=count",),  # everyone
        (f"Condition/{PATIENT}-x?_summary=count",),  # a read, not a search
    ):
        assert _batch(sandbox, *urls).status_code == 403, urls
