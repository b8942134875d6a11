"""The review page and the FHIR API, over real HTTP against the sandbox, as ratios.

- Review: an edit (re-check, rebuild the Composition bundle and markdown, store the revision,
  the edit and the audit event, re-render the review) against opening the review page.
- API: Composition search by patient, and unfiltered with ``_count=20``, against reading one
  Composition, with 30 and then 300 drafts stored (drafts beyond the three made by
  ``$summarize`` are copies under other patient ids). The unfiltered search reads every draft's
  bundle, so its ratio is expected to grow with the store; the patient search is an indexed
  query.

Run: ``python -m bench.review_api``.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from launch.demo import follow_progress, inpatient_encounter
from launch.sandbox.run import Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings
from smartapp.core.tables import DraftRevisionRow, DraftRow, JobRow
from smartapp.state import AppState

REPEATS = 30
REVIEWED = "97da660e-b895-3740-a6fc-f8cb48dcf20c"
PATIENTS = (
    "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
    "97da660e-b895-3740-a6fc-f8cb48dcf20c",
    "c1f85d12-7225-ae0a-d9a2-67fbd365c447",
)


def median_s(call: Callable[[], httpx.Response]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        answer = call()
        times.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text[:300]
    return statistics.median(times)


def on_app_loop(state: AppState, coroutine: Any) -> Any:
    """Run on the app's own event loop, where its database connections live."""
    assert state.loop is not None
    return asyncio.run_coroutine_threadsafe(coroutine, state.loop).result(timeout=300)


async def _copy_drafts(state: AppState, total: int) -> None:
    """Copies of the stored drafts under new patient ids, until ``total`` drafts are stored."""
    async with state.database.sessions() as session, session.begin():
        drafts = list((await session.execute(select(DraftRow))).scalars())
        jobs = {job.id: job for job in (await session.execute(select(JobRow))).scalars()}
        for index in range(total - len(drafts)):
            source = drafts[index % len(drafts)]
            job, draft_id, patient = jobs[source.job_id], str(uuid.uuid4()), uuid.uuid4().hex
            copy_job = JobRow(
                **{c: getattr(job, c) for c in ("iss", "encounter", "state", "stage", "progress")},
                id=str(uuid.uuid4()),
                session_id="bench",
                patient=patient,
                detail="",
                attempts=1,
            )
            session.add(copy_job)
            session.add(
                DraftRow(
                    id=draft_id,
                    job_id=copy_job.id,
                    iss=source.iss,
                    patient=patient,
                    encounter=source.encounter,
                    version=1,
                    status=source.status,
                    bundle=source.bundle,
                    markdown=source.markdown,
                    revision=1,
                    updated_at=source.created_at,
                )
            )
            session.add(
                DraftRevisionRow(draft_id=draft_id, revision=1, status="preliminary", bundle={})
            )


def bench_review(base_url: str, sandbox: Sandbox) -> None:
    browser = httpx.Client(follow_redirects=True, timeout=120)
    encounter = inpatient_encounter(browser.get(sandbox.chart_url).text, REVIEWED)
    landing = browser.post(
        f"{sandbox.chart_url}/launch", data={"patient": REVIEWED, "encounter": encounter}
    )
    job = re.search(r'data-job="([^"]+)"', landing.text).group(1)
    follow_progress(browser, base_url, job)
    draft = browser.get(f"{base_url}/jobs/{job}").json()["draft"]
    url = f"{base_url}/drafts/{draft}"
    page = browser.get(url).text
    sentence = re.search(r'<li id="([^"]+)" class="sentence" data-sentence', page).group(1)
    view = median_s(lambda: browser.get(url))
    state = {"page": page, "turn": 0}

    def edit() -> httpx.Response:
        state["turn"] += 1
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', state["page"]).group(1)
        revision = re.search(r'name="revision" value="(\d+)"', state["page"]).group(1)
        answer = browser.post(
            f"{url}/sentences/{sentence}",
            data={
                "csrf_token": csrf,
                "revision": revision,
                "action": "edit",
                "text": f"Reviewed at the bedside, pass {state['turn']}.",
            },
            headers={"x-requested-with": "provenote-review"},
        )
        state["page"] = answer.text
        return answer

    edited = median_s(edit)
    print(f"review page view: {view * 1000:.1f} ms (baseline)")
    print(f"edit + re-check + new revision: {edited * 1000:.1f} ms = {edited / view:.2f}x the view")


def bench_api(state: AppState, sandbox: Sandbox) -> None:
    api = state.settings.api_base
    token = sandbox.auth.access_token(
        "bench", "system/Composition.rs system/Composition.c", None, audience=api
    )
    client = httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=120)
    ids = []
    for patient in PATIENTS:
        kicked = client.post(f"{api}/Patient/{patient}/$summarize")
        status_url = kicked.headers["content-location"]
        while (polled := client.get(status_url)).status_code == 202:
            time.sleep(0.1)
        ids.append(polled.json()["entry"][0]["resource"]["id"])
    for total in (30, 300):
        on_app_loop(state, _copy_drafts(state, total))
        read = median_s(lambda: client.get(f"{api}/Composition/{ids[0]}"))
        by_patient = median_s(
            lambda: client.get(f"{api}/Composition", params={"patient": PATIENTS[0]})
        )
        unfiltered = median_s(lambda: client.get(f"{api}/Composition", params={"_count": 20}))
        print(
            f"{total} drafts: read {read * 1000:.1f} ms (baseline); search by patient "
            f"{by_patient / read:.2f}x; unfiltered search, 20 a page {unfiltered / read:.2f}x"
        )


def main() -> None:
    port = free_port()
    sandbox = Sandbox(app_launch_url=f"http://127.0.0.1:{port}/launch")
    with sandbox, tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(
            base_url=f"http://127.0.0.1:{port}",
            data_dir=Path(data_dir),
            client_auth="private_key_jwt",
            client_id="bench-review",
            api_issuer=sandbox.issuer,
            api_jwks_url=f"{sandbox.issuer}/jwks",
            api_ehr_base=sandbox.fhir_base,
        )
        settings = sandbox.configure(settings)
        app = create_app(settings)
        server = ThreadedServer(app, port)
        server.start()
        try:
            bench_review(settings.base_url, sandbox)
            bench_api(app.state.provenote, sandbox)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
