"""The record pull: flat in the patient's history, and concurrent against one request at a time.

A discharge summary reads one stay, so pulling it should cost the same whether the patient has
one year of history or a hundred. The patient's history is made 10× and 100× longer by
replicating every past encounter, with everything that points to it, under new ids and dates
shifted years back (their problems resolved and their orders completed, as past stays' are).
Each history is served by its own sandbox FHIR server (Medplum in Node, real HTTP); the
stay-bounded pull is timed against the whole-record pull, as served and with 50 ms added to
every answer, as a hospital network and EHR add latency. The sandbox's repository is Medplum's
in-memory one, which scans every stored resource of a type on each search (an EHR's indexes do
not), so its own time (``Server-Timing``) is shown beside the wall time: what the pull asks for
and receives is the part this code controls. Then, at 50 ms, the client's concurrency (8)
against one request at a time.

Median of 5 stay pulls, one whole-record pull. Run: ``python -m bench.fetch``.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.copies import copied_entries
from launch.sandbox.run import SAMPLES, Sandbox
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import PullBounds, pull_record

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
REPEATS = 5
LATENCY_MS = 50
PAGE_SIZE = 1000


def _mentions(resource: Any, targets: set[str]) -> bool:
    if isinstance(resource, dict):
        return any(_mentions(item, targets) for item in resource.values())
    if isinstance(resource, list):
        return any(_mentions(item, targets) for item in resource)
    return isinstance(resource, str) and resource in targets


def _as_past(resource: dict[str, Any]) -> dict[str, Any]:
    """A past stay's resource as it stands years later: problems resolved, orders done."""
    kind = resource["resourceType"]
    if kind == "Condition":
        resource["clinicalStatus"] = {
            "coding": [
                {
                    "system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                    "code": "resolved",
                }
            ]
        }
        resource.setdefault("abatementDateTime", resource.get("onsetDateTime"))
    elif kind in {"MedicationRequest", "CarePlan"}:
        resource["status"] = "completed"
        period = resource.get("period")
        if kind == "CarePlan" and isinstance(period, dict) and "end" not in period:
            period["end"] = period.get("start")
    return resource


def with_history(bundle: dict[str, Any], times: int) -> dict[str, Any]:
    """The bundle with its past encounters (and what points to them) ``times`` times over."""
    if times <= 1:
        return bundle
    entries = bundle["entry"]
    encounters = [e for e in entries if e["resource"]["resourceType"] == "Encounter"]
    latest = max(e["resource"]["period"]["start"] for e in encounters)
    first = min(e["resource"]["period"]["start"] for e in encounters)
    span = datetime.fromisoformat(latest).year - datetime.fromisoformat(first).year + 1
    past = {e["fullUrl"] for e in encounters if e["resource"]["period"]["start"] < latest[:4]}
    replicated = [
        e
        for e in entries
        if e["fullUrl"] in past
        or (e["resource"]["resourceType"] != "Patient" and _mentions(e["resource"], past))
    ]
    added = [
        entry | {"resource": _as_past(entry["resource"])}
        for number in range(1, times)
        for entry in copied_entries(replicated, f"history-{number}", number * span)
    ]
    return bundle | {"entry": [*entries, *added]}


@dataclass(frozen=True, slots=True)
class Pull:
    """One pull: wall time, what came back, and how long the server's repository worked."""

    seconds: float
    resources: int
    requests: int
    server_seconds: float


def _server_seconds(response: httpx.Response) -> float:
    timing = response.headers.get("server-timing", "")
    found = re.search(r"dur=([0-9.]+)", timing)
    return float(found.group(1)) / 1000 if found else 0.0


async def _pull(sandbox: Sandbox, concurrency: int, bounds: PullBounds) -> Pull:
    context = LaunchContext(f"Patient/{PATIENT}")
    token = sandbox.auth.access_token("bench", "patient/*.rs", context, 3600)
    answers: list[httpx.Response] = []

    async def get_token(refresh: bool) -> str:
        return token

    async def seen(response: httpx.Response) -> None:
        answers.append(response)

    async with httpx.AsyncClient(timeout=600, event_hooks={"response": [seen]}) as http:
        client = FhirClient(
            sandbox.fhir_base, http, get_token, concurrency=concurrency, page_size=PAGE_SIZE
        )
        start = time.perf_counter()
        bundle = await pull_record(client, PATIENT, bounds=bounds)
        seconds = time.perf_counter() - start
    server = sum(_server_seconds(answer) for answer in answers)
    return Pull(seconds, len(bundle["entry"]), len(answers), server)


def _median(sandbox: Sandbox, concurrency: int, bounds: PullBounds, repeats: int = REPEATS) -> Pull:
    runs = [asyncio.run(_pull(sandbox, concurrency, bounds)) for _ in range(repeats)]
    middle = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
    return middle


def _measure(times: int, folder: Path) -> dict[str, Pull]:
    bundle = json.loads((SAMPLES / f"{PATIENT}.json").read_bytes())
    path = folder / f"{PATIENT}-x{times}.json"
    path.write_text(json.dumps(with_history(bundle, times)), encoding="utf-8")
    results = {}
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[path]) as sandbox:
        for label, delay in (("served", 0), ("latency", LATENCY_MS)):
            if delay:
                sandbox.set_fault("slow", count=1_000_000, delay_ms=delay)
            results[f"stay {label}"] = _median(sandbox, 8, PullBounds())
            # The whole record is the reference, not the claim: one pull (minutes at 100x).
            if label == "served":
                results["whole"] = _median(sandbox, 8, PullBounds(whole_record=True), 1)
        if times == 1:
            results["stay sequential"] = _median(sandbox, 1, PullBounds())
        sandbox.set_fault("none", count=0)
    return results


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="provenote-fetch-") as folder:
        runs = {times: _measure(times, Path(folder)) for times in (1, 10, 100)}
    base = runs[1]
    print(f"Record pull of one stay (median of {REPEATS}; ratios against the 1x history)")
    for times, results in runs.items():
        stay, whole = results["stay served"], results["whole"]
        latent = results["stay latency"]
        print(
            f"  {times:>3}x history: stay {stay.resources} resources in {stay.requests} requests "
            f"({stay.resources / base['stay served'].resources:.2f}x, "
            f"{stay.requests / base['stay served'].requests:.2f}x); whole record "
            f"{whole.resources} resources ({whole.resources / base['whole'].resources:.2f}x)"
        )
        stay_ratio = stay.seconds / base["stay served"].seconds
        latent_ratio = latent.seconds / base["stay latency"].seconds
        print(
            f"       as served {stay.seconds * 1e3:6.0f} ms ({stay_ratio:.2f}x; the server's "
            f"repository busy {stay.server_seconds * 1e3:.0f} ms), +{LATENCY_MS} ms/answer "
            f"{latent.seconds * 1e3:6.0f} ms ({latent_ratio:.2f}x); whole record "
            f"{whole.seconds * 1e3:.0f} ms ({whole.seconds / base['whole'].seconds:.2f}x)"
        )
    sequential, concurrent = base["stay sequential"].seconds, base["stay latency"].seconds
    print(
        f"  concurrency at +{LATENCY_MS} ms/answer: one at a time {sequential * 1e3:.0f} ms, "
        f"8 at once {concurrent * 1e3:.0f} ms, speed-up {sequential / concurrent:.2f}x"
    )
    print()


if __name__ == "__main__":
    main()
