"""Launch to review with the draft waiting (a CDS hook drafted it when the discharge started)
against launch to review today (the launch starts the draft), on the same inpatient stays.

The sandbox is seeded with ../shared/data/synthea/california (the shipped samples when that is
absent). Today: the chart launches Provenote, the browser follows the job until it is done, then
opens the review page. Ahead: the chart's "Start discharge" calls the app's encounter-discharge
hook (the service's answer is timed: it is what the EHR waits for), the draft is made meanwhile
(not timed: the discharge paperwork goes on), then the card's link launches Provenote, which
opens the review page at once. Each way runs on an app of its own (a fresh database), against
one sandbox.

Run: ``python -m bench.discharge_ahead``.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.launch_to_draft import stays
from bench.synthea import SYNTHEA
from launch.sandbox.run import SAMPLES, Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings

STAYS = 6
Stay = tuple[str, str]


@contextmanager
def app_for(sandbox: Sandbox) -> Iterator[str]:
    """The app on a port and a database of its own; its base URL."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(base_url=f"http://127.0.0.1:{port}", data_dir=Path(data_dir))
        settings = sandbox.configure(settings)
        sandbox.app_launch_url = settings.launch_url
        server = ThreadedServer(create_app(settings), port)
        server.start()
        try:
            yield settings.base_url
        finally:
            server.stop()


def until_ended(browser: httpx.Client, base: str, job_id: str) -> None:
    while browser.get(f"{base}/jobs/{job_id}").json()["state"] not in {"done", "failed"}:
        time.sleep(0.02)


def launch_today(browser: httpx.Client, sandbox: Sandbox, base: str, stay: Stay) -> float:
    """Launch, follow the job, open the review: seconds."""
    patient, encounter = stay
    start = time.perf_counter()
    landing = browser.post(
        f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
    )
    job_id = re.search(r'data-job="([^"]+)"', landing.text).group(1)  # type: ignore[union-attr]
    until_ended(browser, base, job_id)
    review = browser.get(f"{base}/drafts/{draft_id(browser, base)}")
    assert review.status_code == 200 and 'id="review"' in review.text, job_id
    return time.perf_counter() - start


def draft_id(browser: httpx.Client, base: str) -> str:
    """The draft the landing page links to once the job is done."""
    landing = browser.get(f"{base}/").text
    return re.search(r"/drafts/([0-9a-f-]{36})", landing).group(1)  # type: ignore[union-attr]


def launch_ahead(
    browser: httpx.Client, sandbox: Sandbox, base: str, stay: Stay
) -> tuple[float, float]:
    """The service's answer time (the EHR's own discovery and prefetch apart), then the card's
    launch to the review: seconds each."""
    patient, encounter = stay
    answer = asyncio.run(sandbox.hooks.discharge(base, patient, encounter, sandbox.practitioner))
    hook_s = answer.answered_in_s
    (card,) = answer.cards
    job_id = json.loads(card["links"][0]["appContext"])["job"]
    while True:  # the draft is made while the discharge goes on
        ready = asyncio.run(sandbox.hooks.discharge(base, patient, encounter, sandbox.practitioner))
        named = json.loads(ready.cards[0]["links"][0]["appContext"])
        if "draft" in named:
            break
        time.sleep(0.2)
    start = time.perf_counter()
    review = browser.post(
        f"{sandbox.chart_url}/launch",
        data={"patient": patient, "encounter": encounter, "app_context": json.dumps(named)},
    )
    assert review.status_code == 200 and 'id="review"' in review.text, job_id
    return hook_s, time.perf_counter() - start


def main() -> None:
    seeds = [SYNTHEA] if SYNTHEA.is_dir() else [SAMPLES]
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=seeds) as sandbox:
        chosen = stays(httpx.get(sandbox.chart_url, timeout=300).text)[:STAYS]
        today, ahead, hooks = [], [], []
        with app_for(sandbox) as base:
            for stay in chosen:
                with httpx.Client(follow_redirects=True, timeout=300) as browser:
                    today.append(launch_today(browser, sandbox, base, stay))
        with app_for(sandbox) as base:
            for stay in chosen:
                with httpx.Client(follow_redirects=True, timeout=300) as browser:
                    hook_s, review_s = launch_ahead(browser, sandbox, base, stay)
                hooks.append(hook_s)
                ahead.append(review_s)
    waited, opened = statistics.median(today), statistics.median(ahead)
    print(f"Launch to review, {len(chosen)} inpatient stays (median seconds)")
    print(f"  today (the launch starts the draft)      {waited:7.3f}")
    print(f"  with the draft waiting (CDS hook ahead)  {opened:7.3f}")
    print(f"  today / waiting = {waited / opened:.1f}x")
    print(
        f"  the hook's answer: median {statistics.median(hooks):.3f} s, "
        f"slowest {max(hooks):.3f} s (it never waits for the draft)\n"
    )


if __name__ == "__main__":
    main()
