"""The record pull: flat in the patient's history, and concurrent against one request at a time.

A discharge summary reads one stay, so pulling it should cost the same whether the patient has
one year of history or a hundred. The patient's history is made 10× and 100× longer by
replicating every past encounter, with everything that points to it, under new ids and dates
shifted years back (their problems resolved and their orders completed, as past stays' are).
Each history is served by its own sandbox FHIR server (Medplum in Node, real HTTP); the
stay-bounded pull is timed against the whole-record pull, as served and with 50 ms added to
every answer, as a hospital network and EHR add latency. Then, at 50 ms, the client's
concurrency (8) against one request at a time.

Median of 5 stay pulls, one whole-record pull. Run: ``python -m bench.fetch``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.copies import copied_entries
from launch.sandbox.run import SAMPLES, Sandbox
from smartapp.fhir_client import FhirClient, PullBounds, pull_record

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


async def _pull(sandbox: Sandbox, concurrency: int, bounds: PullBounds) -> tuple[float, int]:
    context = LaunchContext(f"Patient/{PATIENT}")
    token = sandbox.auth.access_token("bench", "patient/*.rs", context, 3600)

    async def get_token(refresh: bool) -> str:
        return token

    async with httpx.AsyncClient(timeout=300) as http:
        client = FhirClient(
            sandbox.fhir_base, http, get_token, concurrency=concurrency, page_size=PAGE_SIZE
        )
        start = time.perf_counter()
        bundle = await pull_record(client, PATIENT, bounds=bounds)
        return time.perf_counter() - start, len(bundle["entry"])


def _median(
    sandbox: Sandbox, concurrency: int, bounds: PullBounds, repeats: int = REPEATS
) -> tuple[float, int]:
    runs = [asyncio.run(_pull(sandbox, concurrency, bounds)) for _ in range(repeats)]
    return statistics.median(seconds for seconds, _ in runs), runs[0][1]


def _measure(times: int, folder: Path) -> dict[str, tuple[float, int]]:
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
            results[f"whole {label}"] = _median(sandbox, 8, PullBounds(whole_record=True), 1)
            print(f"  ({times}x {label}: {results[f'stay {label}'][0]:.3f} s)", flush=True)
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
        for label in ("served", "latency"):
            stay, pulled = results[f"stay {label}"]
            whole, everything = results[f"whole {label}"]
            tag = "as served" if label == "served" else f"+{LATENCY_MS} ms/answer"
            print(
                f"  {times:>3}x history, {tag:<15} stay {stay * 1e3:7.0f} ms ({pulled} res., "
                f"{stay / base[f'stay {label}'][0]:.2f}x)  whole record {whole * 1e3:7.0f} ms "
                f"({everything} res., {whole / base[f'whole {label}'][0]:.2f}x)"
            )
    sequential, concurrent = base["stay sequential"][0], base["stay latency"][0]
    print(
        f"  concurrency at +{LATENCY_MS} ms/answer: one at a time {sequential * 1e3:.0f} ms, "
        f"8 at once {concurrent * 1e3:.0f} ms, speed-up {sequential / concurrent:.2f}x"
    )
    print()


if __name__ == "__main__":
    main()
