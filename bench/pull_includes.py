"""The record pull with ``_include`` against reading each reference: requests and wall time.

Synthea codes every medication inline, so its pulls have no Medication to follow. Many EHRs
answer each order with a reference to a Medication resource instead; this bench makes patient
0d4fcba9's orders do so (one Medication per order), loads it into the sandbox (whose
CapabilityStatement offers ``MedicationRequest:medication``), and pulls the stay at +50 ms per
answer, as a hospital network adds, two ways: the EHR's offer taken (each search brings its
orders' medications) and ignored (one read per medication, after the searches). Median of 5
pulls each, side by side on one sandbox. Run: ``python -m bench.pull_includes``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import SAMPLES, Sandbox
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import OFFERED_INCLUDES, pull_record

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
REPEATS = 5
LATENCY_MS = 50


def medications_as_resources(bundle: dict[str, Any]) -> dict[str, Any]:
    """The transaction bundle with each order's inline medication made a Medication resource
    that the order references."""
    added = []
    for entry in bundle["entry"]:
        order = entry["resource"]
        concept = order.get("medicationCodeableConcept")
        if order["resourceType"] != "MedicationRequest" or concept is None:
            continue
        full_url = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, entry['fullUrl'])}"
        medication = {
            "resourceType": "Medication",
            "id": full_url.removeprefix("urn:uuid:"),
            "code": concept,
        }
        added.append(
            {
                "fullUrl": full_url,
                "resource": medication,
                "request": {"method": "POST", "url": "Medication"},
            }
        )
        del order["medicationCodeableConcept"]
        order["medicationReference"] = {"reference": full_url}
    return bundle | {"entry": [*added, *bundle["entry"]]}


async def _pull(sandbox: Sandbox) -> tuple[float, int, int]:
    token = sandbox.auth.access_token(
        "bench", "patient/*.rs", LaunchContext(f"Patient/{PATIENT}"), 3600
    )
    answers = 0

    async def seen(response: httpx.Response) -> None:
        nonlocal answers
        answers += 1

    async def bearer(refresh: bool) -> str:
        return token

    async with httpx.AsyncClient(timeout=600, event_hooks={"response": [seen]}) as http:
        client = FhirClient(sandbox.fhir_base, http, bearer, concurrency=8, page_size=1000)
        started = time.perf_counter()
        bundle = await pull_record(client, PATIENT)
        seconds = time.perf_counter() - started
    medications = sum(e["resource"]["resourceType"] == "Medication" for e in bundle["entry"])
    return seconds, answers, medications


def _median(sandbox: Sandbox, offer: frozenset[str] | None) -> tuple[float, int, int]:
    runs = []
    for _ in range(REPEATS):
        OFFERED_INCLUDES.pop(sandbox.fhir_base, None)
        if offer is not None:
            OFFERED_INCLUDES[sandbox.fhir_base] = offer
        asyncio.run(_pull(sandbox))  # the CapabilityStatement read, then the pull timed warm
        runs.append(asyncio.run(_pull(sandbox)))
    return sorted(runs)[len(runs) // 2]


def main() -> None:
    bundle = json.loads((SAMPLES / f"{PATIENT}.json").read_bytes())
    with tempfile.TemporaryDirectory(prefix="provenote-includes-") as folder:
        path = Path(folder) / f"{PATIENT}.json"
        path.write_text(json.dumps(medications_as_resources(bundle)), encoding="utf-8")
        with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[path]) as sandbox:
            sandbox.set_fault("slow", count=1_000_000, delay_ms=LATENCY_MS)
            taken = _median(sandbox, None)
            ignored = _median(sandbox, frozenset())
            sandbox.set_fault("none", count=0)
    print(
        f"Record pull of one stay, medications as resources, +{LATENCY_MS} ms per answer "
        f"(median of {REPEATS})"
    )
    for label, (seconds, requests, medications) in (
        ("_include offered and taken", taken),
        ("each reference read", ignored),
    ):
        print(f"  {label}: {requests} requests, {medications} medications, {seconds * 1e3:.0f} ms")
    print(
        f"  with _include / reading each: requests {taken[1] / ignored[1]:.2f}x, "
        f"wall time {taken[0] / ignored[0]:.2f}x"
    )


if __name__ == "__main__":
    main()
