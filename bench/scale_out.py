"""Launch to stored draft on 2 web + 2 worker processes (PostgreSQL, procrastinate) against the
embedded default (one process, SQLite, jobs in-process), in the same run.

The sandbox is seeded with ../shared/data/synthea/california (the shipped samples when that is
absent); up to 10 inpatient stays are launched from the chart, first one after another (the
latency a physician sees), then all at once (what the installation does under load). The scale-out
run goes through the shipped nginx site (round robin, no affinity), so launches cross web
processes. On a machine with two cores the extra processes share the same CPUs: the figure shows
what the coordination (database queue, NOTIFY, shared sessions) costs, not what more machines would
add.

Run: ``python -m bench.scale_out`` (needs PostgreSQL, PROVENOTE_TEST_POSTGRES names it, and nginx).
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.launch_to_draft import stays
from bench.synthea import SYNTHEA
from launch.sandbox.cluster import cluster, temporary_postgres
from launch.sandbox.run import SAMPLES, Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings


def _launch(sandbox: Sandbox, base_url: str, stay: tuple[str, str]) -> float:
    """Seconds from the chart's launch to the job's end (done or failed)."""
    patient, encounter = stay
    with httpx.Client(follow_redirects=True, timeout=600) as browser:
        start = time.perf_counter()
        landing = browser.post(
            f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
        )
        job_id = re.search(r'data-job="([^"]+)"', landing.text).group(1)
        while browser.get(f"{base_url}/jobs/{job_id}").json()["state"] not in {"done", "failed"}:
            time.sleep(0.05)
        return time.perf_counter() - start


def _measure(sandbox: Sandbox, base_url: str, chosen: list[tuple[str, str]]) -> tuple[float, float]:
    """(median seconds per launch one after another, seconds for all launched at once)."""
    sandbox.app_launch_url = f"{base_url}/launch"
    one_by_one = statistics.median(_launch(sandbox, base_url, stay) for stay in chosen)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
        list(pool.map(lambda stay: _launch(sandbox, base_url, stay), chosen))
    return one_by_one, time.perf_counter() - start


def main() -> None:
    seeds = [SYNTHEA] if SYNTHEA.is_dir() else [SAMPLES]
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as folder,
        Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=seeds) as sandbox,
    ):
        chosen = stays(httpx.get(sandbox.chart_url, timeout=300).text)
        settings = sandbox.configure(
            Settings(base_url=f"http://127.0.0.1:{port}", data_dir=Path(folder) / "one")
        )
        server = ThreadedServer(create_app(settings), port)
        server.start()
        try:
            embedded = _measure(sandbox, settings.base_url, chosen)
        finally:
            server.stop()
        with (
            temporary_postgres() as database,
            cluster(sandbox, Path(folder) / "many", database) as running,
        ):
            scaled = _measure(sandbox, running.base_url, chosen)
    print(f"Launch to stored draft, {len(chosen)} inpatient stays: embedded vs 2 web + 2 workers")
    print(
        f"  one after another (median per launch)  embedded {embedded[0]:6.2f} s   "
        f"scale-out {scaled[0]:6.2f} s   ratio {scaled[0] / embedded[0]:.2f}x"
    )
    print(
        f"  all at once (wall time)                embedded {embedded[1]:6.2f} s   "
        f"scale-out {scaled[1]:6.2f} s   ratio {scaled[1] / embedded[1]:.2f}x"
    )
    print()


if __name__ == "__main__":
    main()
