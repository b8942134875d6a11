"""``provenote demo``: the whole flow on one machine, as a physician and an EHR would drive it.

Starts the sandbox EHR and the app, launches Provenote from the chart for a Synthea patient with
an inpatient stay (following the redirects as a browser does), follows the job's progress over
Server-Sent Events, then prints the draft and where to look at it. With ``--discharge`` it
shows the card flow instead: the chart starts the discharge (the CDS hook), the hook's cards, and
the card's link opening the draft that was made meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from launch.sandbox.run import Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings

DEMO_PATIENT = "97da660e-b895-3740-a6fc-f8cb48dcf20c"


class DemoError(RuntimeError):
    pass


def charted_patients(chart_html: str) -> list[str]:
    """The ids of the patients the chart lists, in its order."""
    return re.findall(r'<h2 id="([^"]+)"', chart_html)


def inpatient_encounter(chart_html: str, patient: str) -> str:
    """The most recent inpatient encounter the chart lists for ``patient``."""
    if f'id="{patient}"' not in chart_html:
        raise DemoError(f"the chart does not list patient {patient}")
    section = chart_html.split(f'id="{patient}"', 1)[1].split("<h2", 1)[0]
    for row in re.findall(r"<tr>(.*?)</tr>", section, re.S):
        if "<td>IMP</td>" in row:
            found = re.search(r'name="encounter" value="([^"]+)"', row)
            if found:
                return found.group(1)
    raise DemoError(f"patient {patient} has no inpatient encounter")


def follow_progress(browser: httpx.Client, base_url: str, job_id: str) -> dict:
    """Print each progress event until the job is done or failed; the last event."""
    last: dict = {}
    with browser.stream("GET", f"{base_url}/jobs/{job_id}/events", timeout=600) as events:
        for line in events.iter_lines():
            if not line.startswith("data:"):
                continue
            last = json.loads(line.removeprefix("data:").strip())
            filled = int(last.get("progress", 0) * 30)
            bar = "#" * filled + "." * (30 - filled)
            print(f"[{bar}] {last['stage']:<13} {last['detail']}", file=sys.stderr, flush=True)
            if last.get("state") in {"done", "failed"}:
                break
    return last


def launched_draft(browser: httpx.Client, sandbox: Sandbox, base_url: str, encounter: str) -> str:
    """Launch from the chart as a browser would, follow the job: the draft's id."""
    landing = browser.post(
        f"{sandbox.chart_url}/launch",
        data={"patient": DEMO_PATIENT, "encounter": encounter},
    )
    found = re.search(r'data-job="([^"]+)"', landing.text)
    if landing.status_code != 200 or found is None:
        raise DemoError(f"the launch did not start a job (HTTP {landing.status_code})")
    job = follow_progress(browser, base_url, found.group(1))
    if job.get("state") != "done":
        raise DemoError(f"the job failed at {job.get('stage')}: {job.get('error')}")
    draft_id = re.search(r'href="/drafts/([^"]+)"', browser.get(f"{base_url}/").text)
    if draft_id is None:
        raise DemoError("the job finished without a stored draft")
    return draft_id.group(1)


def _card(sandbox: Sandbox, base_url: str, encounter: str) -> dict[str, Any]:
    """Start discharge in the chart: the one card the hook answered."""
    answer = asyncio.run(
        sandbox.hooks.discharge(base_url, DEMO_PATIENT, encounter, sandbox.practitioner)
    )
    if answer.status != 200 or len(answer.cards) != 1:
        raise DemoError(f"the discharge hook answered {answer.status}: {answer.error or 'no card'}")
    card = answer.cards[0]
    print(f"card ({card['indicator']}): {card['summary']}", file=sys.stderr, flush=True)
    return card


def discharged_draft(browser: httpx.Client, sandbox: Sandbox, base_url: str, encounter: str) -> str:
    """Start the discharge (the CDS hook drafts ahead), wait for the "ready" card, then launch
    from its link straight into the draft: the draft's id."""
    card = _card(sandbox, base_url, encounter)
    deadline = time.monotonic() + 600
    while "draft" not in json.loads(card["links"][0]["appContext"]):
        if time.monotonic() > deadline:
            raise DemoError("the hook's draft was not ready within 10 minutes")
        time.sleep(1.0)
        card = _card(sandbox, base_url, encounter)
    named = card["links"][0]["appContext"]
    opened = browser.post(
        f"{sandbox.chart_url}/launch",
        data={"patient": DEMO_PATIENT, "encounter": encounter, "app_context": named},
    )
    draft_id = json.loads(named)["draft"]
    if opened.status_code != 200 or not str(opened.url).endswith(f"/drafts/{draft_id}"):
        raise DemoError(f"the card's link did not open the draft (HTTP {opened.status_code})")
    return str(draft_id)


def written_draft(browser: httpx.Client, base_url: str, draft_id: str) -> dict[str, Any]:
    """The draft once its write-back is recorded (a draft made ahead is written as it opens)."""
    deadline = time.monotonic() + 60
    while True:
        draft: dict[str, Any] = browser.get(f"{base_url}/api/drafts/{draft_id}").json()
        if draft.get("write_back") or time.monotonic() > deadline:
            return draft
        time.sleep(0.2)


def run_demo(
    data_dir: Path, keep_running: bool, summarizer: str = "evidence-only", discharge: bool = False
) -> int:
    """The demo; ``discharge``: the card flow (Start discharge, the hook's cards, the card's
    link into the draft waiting) instead of a plain launch."""
    port = free_port()
    sandbox = Sandbox(app_launch_url=f"http://127.0.0.1:{port}/launch")
    # The app's FHIR API trusts the sandbox's authorization server, as a hospital's would its own.
    settings = Settings(
        base_url=f"http://127.0.0.1:{port}",
        data_dir=data_dir,
        client_auth="private_key_jwt",
        client_id="provenote-demo",
        api_issuer=sandbox.issuer,
        api_jwks_url=f"{sandbox.issuer}/jwks",
        api_token_url=sandbox.auth.token_url,
        api_ehr_base=sandbox.fhir_base,
        summarizer=summarizer,
        # A model's failure shows as a failed job here, not as a silent evidence-only draft.
        model_fallback="fail" if summarizer != "evidence-only" else "evidence-only",
    )
    with sandbox:
        settings = sandbox.configure(settings)
        server = ThreadedServer(create_app(settings), port)
        server.start()
        try:
            with httpx.Client(follow_redirects=True, timeout=120) as browser:
                encounter = inpatient_encounter(browser.get(sandbox.chart_url).text, DEMO_PATIENT)
                opened = discharged_draft if discharge else launched_draft
                draft_id = opened(browser, sandbox, settings.base_url, encounter)
                draft = written_draft(browser, settings.base_url, draft_id)
            written = draft.get("write_back") or {}
            print(draft["markdown"])
            print(f"Chart: {sandbox.chart_url}")
            print(f"App: {settings.base_url}/")
            print(f"Draft: {settings.base_url}/drafts/{draft['id']}")
            print(f"FHIR API: {settings.api_base}/Composition/{draft['id']}")
            remote = written.get("remote")
            print(f"Composition: {sandbox.fhir_base}/{remote}" if remote else "Composition: none")
            sys.stdout.flush()
            if written.get("status") != "done":
                raise DemoError(f"the draft was not written back ({written})")
            if keep_running:
                print("Everything stays up; stop with Ctrl-C.", file=sys.stderr, flush=True)
                threading.Event().wait()
            return 0
        finally:
            server.stop()
