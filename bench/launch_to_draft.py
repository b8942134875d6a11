"""Launch to stored draft for 10 Synthea inpatient stays, by stage, against the I/O floor; and a
relaunch of each drafted stay (seconds, and requests to the EHR).

The sandbox is seeded with ../shared/data/synthea/california (the shipped samples when that is
absent); 10 inpatient encounters are launched from the chart one after another, each through the
whole path (SMART launch, job, record pull, evidence, summary, write-back). A stage hook stamps
when each stage starts. The floor is only pulling the same patients' records with the same client.

Run: ``python -m bench.launch_to_draft``.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.synthea import SYNTHEA
from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import SAMPLES, Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import pull_record

STAYS = 10
STAGES = ("launch", "queued", "fetching", "ingesting", "summarizing", "writing_back")


def stays(chart: str) -> list[tuple[str, str]]:
    found = []
    for part in chart.split('<h2 id="')[1:]:
        patient = part.split('"', 1)[0]
        for row in re.findall(r"<tr>(.*?)</tr>", part.split("<h2", 1)[0], re.S):
            if "<td>IMP</td>" in row:
                found.append(
                    (patient, re.search(r'name="encounter" value="([^"]+)"', row).group(1))
                )
    return found[:STAYS]


async def _pull(sandbox: Sandbox, patient: str, encounter: str) -> float:
    token = sandbox.auth.access_token("bench", "patient/*.rs", LaunchContext(f"Patient/{patient}"))

    async def get_token(refresh: bool) -> str:
        return token

    async with httpx.AsyncClient(timeout=120) as http:
        start = time.perf_counter()
        await pull_record(FhirClient(sandbox.fhir_base, http, get_token), patient, encounter)
        return time.perf_counter() - start


Stamps = dict[str, list[tuple[str, float]]]


def launch_once(
    sandbox: Sandbox, base_url: str, stamps: Stamps, patient: str, encounter: str
) -> tuple[float, dict[str, float]]:
    """One launch from the chart to its ended job: the total, and each stage's seconds."""
    with httpx.Client(follow_redirects=True, timeout=300) as browser:
        start = time.perf_counter()
        landing = browser.post(
            f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
        )
        landed = time.perf_counter()
        job_id = re.search(r'data-job="([^"]+)"', landing.text).group(1)
        while browser.get(f"{base_url}/jobs/{job_id}").json()["state"] not in {"done", "failed"}:
            time.sleep(0.02)
        end = time.perf_counter()
    # "launch": the SMART launch to the landing page; "queued": waiting for a free job worker.
    marks = [("launch", start), ("queued", landed), *stamps[job_id], ("end", end)]
    return end - start, {
        stage: following - at for (stage, at), (_, following) in itertools.pairwise(marks)
    }


@contextmanager
def launched_app(stamps: Stamps) -> Iterator[tuple[Sandbox, str, list[tuple[str, str]]]]:
    """The sandbox seeded with the Synthea stays (the samples without them), the app beside it
    with a stage hook stamping ``stamps``, and the inpatient stays the chart lists."""

    async def stamp(job_id: str, stage: str) -> None:
        stamps[job_id].append((stage, time.perf_counter()))

    seeds = [SYNTHEA] if SYNTHEA.is_dir() else [SAMPLES]
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as data_dir,
        Sandbox(app_launch_url=f"http://127.0.0.1:{port}/launch", seed_paths=seeds) as sandbox,
    ):
        settings = Settings(base_url=f"http://127.0.0.1:{port}", data_dir=Path(data_dir))
        server = ThreadedServer(create_app(sandbox.configure(settings), stamp), port)
        server.start()
        try:
            yield sandbox, settings.base_url, stays(httpx.get(sandbox.chart_url, timeout=300).text)
        finally:
            server.stop()


def relaunch_once(sandbox: Sandbox, patient: str, encounter: str) -> tuple[float, int]:
    """A launch of a stay already drafted, chart to the opened review: seconds and the requests
    it made to the EHR's FHIR server."""
    before = sandbox.fhir_requests()
    with httpx.Client(follow_redirects=True, timeout=300) as browser:
        start = time.perf_counter()
        opened = browser.post(
            f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
        )
        took = time.perf_counter() - start
    assert "/drafts/" in str(opened.url), "the relaunch did not open the draft"
    return took, sandbox.fhir_requests() - before


def main() -> None:
    stamps: Stamps = defaultdict(list)
    with launched_app(stamps) as (sandbox, base_url, chosen):
        totals, floors, relaunches = [], [], []
        by_stage: dict[str, list[float]] = defaultdict(list)
        for patient, encounter in chosen:
            total, stages = launch_once(sandbox, base_url, stamps, patient, encounter)
            for stage, seconds in stages.items():
                by_stage[stage].append(seconds)
            totals.append(total)
            relaunches.append(relaunch_once(sandbox, patient, encounter))
            floors.append(asyncio.run(_pull(sandbox, patient, encounter)))
    print(f"Launch to stored, written-back draft: {len(totals)} inpatient stays (median seconds)")
    for stage in STAGES:
        if by_stage.get(stage):
            print(f"  {stage:<13} {statistics.median(by_stage[stage]):7.3f}")
    total, floor = statistics.median(totals), statistics.median(floors)
    print(f"  total         {total:7.3f}")
    print(f"  record pull only (the I/O floor) {floor:.3f} s; total / floor = {total / floor:.2f}")
    seconds = statistics.median(took for took, _ in relaunches)
    asked = max(count for _, count in relaunches)
    print(
        f"  relaunch of a drafted stay: {seconds:.3f} s (median), at most {asked} FHIR requests\n"
    )


if __name__ == "__main__":
    main()
