"""Pulling a patient's record from the sandbox: the concurrent client against one request at a time.

Both use the same client and the same sandbox FHIR server on loopback (Medplum in Node, real
HTTP); the only difference is the client's concurrency limit (8 against 1). Median of 5 pulls,
twice: as the sandbox answers (its single Node thread does all the searching, so requests queue
there), and with 25 ms added to every answer, as a hospital network and EHR add latency.

Run: ``python -m bench.fetch``.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import Sandbox
from smartapp.fhir_client import FhirClient, pull_record

PATIENT = "97da660e-b895-3740-a6fc-f8cb48dcf20c"
REPEATS = 5


async def _pull(sandbox: Sandbox, concurrency: int) -> tuple[float, int]:
    token = sandbox.auth.access_token("bench", "patient/*.rs", LaunchContext(f"Patient/{PATIENT}"))

    async def get_token(refresh: bool) -> str:
        return token

    async with httpx.AsyncClient(timeout=60) as http:
        client = FhirClient(
            sandbox.fhir_base, http, get_token, concurrency=concurrency, page_size=20
        )
        start = time.perf_counter()
        bundle = await pull_record(client, PATIENT)
        return time.perf_counter() - start, len(bundle["entry"])


def _measure(sandbox: Sandbox) -> dict[int, tuple[float, int]]:
    results = {}
    for concurrency in (1, 8):
        runs = [asyncio.run(_pull(sandbox, concurrency)) for _ in range(REPEATS)]
        results[concurrency] = (statistics.median(t for t, _ in runs), runs[0][1])
    return results


def main() -> None:
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as sandbox:
        plain = _measure(sandbox)
        sandbox.set_fault("slow", count=1_000_000, delay_ms=25)
        latent = _measure(sandbox)
        sandbox.set_fault("none", count=0)
    print(
        f"Record pull from the sandbox ({plain[1][1]} resources, 20 per page, median of {REPEATS})"
    )
    for label, results in (("as served", plain), ("+25 ms per answer", latent)):
        serial, concurrent = results[1][0], results[8][0]
        print(
            f"  {label:<18} one at a time {serial * 1e3:6.0f} ms, concurrency 8 "
            f"{concurrent * 1e3:6.0f} ms, speed-up {serial / concurrent:.2f}x"
        )
    print()


if __name__ == "__main__":
    main()
