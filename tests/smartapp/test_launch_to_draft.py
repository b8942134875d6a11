"""Launch → job → draft stored → written back, end to end, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fhir_mapping.composition import DRAFT_KEY_SYSTEM
from fhir_mapping.write_plan import idempotency_key
from launch.sandbox.run import Sandbox
from smartapp.core.tables import JobRow
from tests.review_support import accept_all, form_values
from tests.smart_support import (
    RunningApp,
    app_and_browser,
    chart_launch,
    launch_job,
    running_app,
    wait_for,
)

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"


@pytest.fixture(scope="module", params=["composition", "document-reference", "final-only"])
def profiled_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox(
        app_launch_url="http://127.0.0.1:1/launch", capability_profile=request.param
    ) as box:
        yield box


def launch(browser: httpx.Client, sandbox: Sandbox, patient: str = PATIENT) -> str:
    return launch_job(browser, sandbox, patient)


def draft_of(browser: httpx.Client, app: RunningApp) -> dict:
    page = browser.get(f"{app.base_url}/").text
    draft_id = page.split('href="/drafts/', 1)[1].split('"', 1)[0]
    return browser.get(f"{app.base_url}/api/drafts/{draft_id}").json()


def on_server(sandbox: Sandbox, kind: str, **params: str) -> list[dict]:
    answer = httpx.get(
        f"{sandbox.fhir_base}/{kind}",
        params=params,
        headers={"x-admin-token": sandbox.admin_token},
    )
    return [entry["resource"] for entry in answer.json().get("entry", [])]


def identifier_of(app: RunningApp, draft: dict) -> str:
    key = idempotency_key(
        app.state.installation, draft["patient"], draft["encounter"], draft["version"]
    )
    return f"{DRAFT_KEY_SYSTEM}|{key}"


def test_launch_to_draft_for_each_capability_profile(
    profiled_sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox = profiled_sandbox
    profile = sandbox.capability_profile
    with app_and_browser(sandbox, tmp_path, client_id=f"app-{profile}") as (app, browser):
        job = wait_for(browser, app, launch(browser, sandbox))
        assert job["state"] == "done", job
        draft = draft_of(browser, app)
        assert draft["status"] == "preliminary" and draft["version"] == 1
        assert draft["markdown"].startswith("# Discharge summary: AI DRAFT")
        compositions = on_server(sandbox, "Composition", identifier=identifier_of(app, draft))
        documents = on_server(sandbox, "DocumentReference", identifier=identifier_of(app, draft))
        if profile == "composition":
            assert draft["write_back"]["strategy"] == "composition"
            (composition,) = compositions
            assert composition["status"] == "preliminary"
            assert composition["subject"]["reference"] == f"Patient/{PATIENT}"
            assert draft["write_back"]["remote"] == f"Composition/{composition['id']}"
            target = f"Composition/{composition['id']}"
            assert len(on_server(sandbox, "Provenance", target=target)) == len(
                composition["section"]
            )
        elif profile == "document-reference":
            assert draft["write_back"]["strategy"] == "document-reference"
            assert compositions == []
            (document,) = documents
            assert document["docStatus"] == "preliminary"
            assert document["type"]["coding"][0]["code"] == "18842-5"
            encounter = document["context"]["encounter"][0]["reference"]
            assert encounter == f"Encounter/{draft['encounter']}"
            attachment = document["content"][0]["attachment"]
            assert attachment["contentType"] == "text/plain; charset=utf-8"
            assert (
                base64.b64decode(attachment["data"]).decode().startswith("AI DRAFT - NOT REVIEWED")
            )
        else:
            assert draft["write_back"] == {
                "strategy": "final-only",
                "status": "deferred",
                "remote": None,
            }
            assert compositions == [] and documents == []

        page = accept_all(browser, app.base_url, draft["id"])
        signed = browser.post(f"{app.base_url}/drafts/{draft['id']}/sign", data=form_values(page))
        assert signed.status_code == 200 and 'id="signed"' in signed.text
        final = draft_of(browser, app)
        assert final["status"] == "final"
        assert final["markdown"].startswith(
            "# Discharge summary, signed by Dr. Sandra Box (Practitioner/"
        )
        compositions = on_server(sandbox, "Composition", identifier=identifier_of(app, draft))
        documents = on_server(sandbox, "DocumentReference", identifier=identifier_of(app, draft))
        if profile == "composition":
            (composition,) = compositions  # the same copy, updated in place
            assert f"Composition/{composition['id']}" == draft["write_back"]["remote"]
            assert composition["status"] == "final"
            assert composition["attester"][0]["party"]["reference"] == sandbox.practitioner
            target = f"Composition/{composition['id']}"
            assert len(on_server(sandbox, "Provenance", target=target)) == (
                len(composition["section"]) + 1  # the verifier
            )
        else:  # updated in place, or (final-only) created now
            (document,) = documents
            assert document["docStatus"] == "final"
            assert document["authenticator"]["reference"] == sandbox.practitioner
            text = base64.b64decode(document["content"][0]["attachment"]["data"]).decode()
            assert text.startswith(
                "Discharge summary drafted by Provenote (AI), reviewed and signed"
            )
        assert final["write_back"]["status"] == "signed"
        if profile != "composition":
            # The next draft of the stay reads the chart with our note in it: never as evidence.
            again = wait_for(browser, app, launch(browser, sandbox))
            second = app.call(app.state.drafts.load(again["draft"]))
            (ours,) = documents
            cited = {ref["resource"] for d in second.evidence["documents"] for ref in d["sources"]}
            assert f"DocumentReference/{ours['id']}" not in cited
            # Dated when it was written, after the stay, it is not even pulled; had it been,
            # the mapping excludes it (tests/fhir_mapping/test_fhir_mapping_rules.py).
            excluded = {exclusion["resource"] for exclusion in second.evidence["exclusions"]}
            assert (
                f"DocumentReference/{ours['id']}" not in excluded
                or {
                    "resource": f"DocumentReference/{ours['id']}",
                    "kind": "ai_generated",
                    "reason": "AI-generated draft",
                }
                in second.evidence["exclusions"]
            )


def test_jobs_persist_on_either_database_and_running_a_job_twice_writes_once(
    sandbox: Sandbox, tmp_path: Path, database_url: str | None
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-twice", database_url=database_url) as (
        app,
        browser,
    ):
        job_id = launch(browser, sandbox)
        assert wait_for(browser, app, job_id)["state"] == "done"
        draft = draft_of(browser, app)
        job = app.call(app.state.jobs.get(job_id))
        app.call(app.state.jobs._run(job))  # the same job, run again from the start
        assert browser.get(f"{app.base_url}/jobs/{job_id}").json()["state"] == "done"
        assert len(on_server(sandbox, "Composition", identifier=identifier_of(app, draft))) == 1
        assert draft_of(browser, app)["id"] == draft["id"]


# Timing-sensitive (an HTTP timeout the pull must never reach): run alone, after the parallel
# suite, with a wide margin between the pull's answers and the write's.
@pytest.mark.serial
def test_a_write_back_retried_after_a_timeout_leaves_one_draft(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-timeout", http_timeout_s=4.0) as (
        app,
        browser,
    ):
        sandbox.set_fault("slow", count=1, delay_ms=6000, match="POST /Composition")
        try:
            job = wait_for(browser, app, launch(browser, sandbox))
        finally:
            sandbox.set_fault("none", count=0)
        assert job["state"] == "done", job
        draft = draft_of(browser, app)
        assert len(on_server(sandbox, "Composition", identifier=identifier_of(app, draft))) == 1


def test_a_job_interrupted_mid_write_back_resumes_once_after_restart(
    sandbox: Sandbox, tmp_path: Path, database_url: str | None
) -> None:
    reached = threading.Event()

    async def die_at_write_back(job_id: str, stage: str) -> None:
        if stage == "writing_back":
            reached.set()
            await asyncio.Event().wait()  # the process "dies" here: nothing after runs

    options = {"client_id": "app-crash", "database_url": database_url, "job_lease_s": 2.0}
    handed_back = requeued("handed_back")
    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        with running_app(sandbox, tmp_path, die_at_write_back, **options):
            job_id = launch(browser, sandbox)
            assert reached.wait(timeout=120)
        with running_app(sandbox, tmp_path, **options) as second:
            job = wait_for(browser, second, job_id)
            assert job["state"] == "done" and job["attempts"] == 2
            assert requeued("handed_back") == handed_back + 1  # the stopped app gave it back
            draft = draft_of(browser, second)
            assert draft["version"] == 1
            written = on_server(sandbox, "Composition", identifier=identifier_of(second, draft))
            assert len(written) == 1


@pytest.mark.shared_data
@pytest.mark.serial  # load: run alone, after the parallel suite
def test_concurrent_launches_for_every_inpatient_never_mix_patients(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from launch.demo import DemoError
    from launch.demo import inpatient_encounter as chart_inpatient_encounter
    from tests.conftest import SYNTHEA

    with (
        Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[SYNTHEA]) as sandbox,
        running_app(sandbox, tmp_path, client_id="app-load", job_workers=4) as app,
    ):
        chart = httpx.get(sandbox.chart_url, timeout=120).text
        encounters = {}
        for part in chart.split('<h2 id="')[1:]:
            patient = part.split('"', 1)[0]
            with contextlib.suppress(DemoError):  # drafts are for inpatient stays only
                encounters[patient] = chart_inpatient_encounter(chart, patient)
        patients = list(encounters)[:10]
        assert len(patients) >= 8

        def one_launch(patient: str) -> tuple[str, dict, dict]:
            with httpx.Client(follow_redirects=True, timeout=120) as browser:
                landing = chart_launch(browser, sandbox, patient, encounters[patient])
                job_id = landing.text.split('data-job="', 1)[1].split('"', 1)[0]
                job = wait_for(browser, app, job_id, timeout_s=300)
                draft = browser.get(f"{app.base_url}/api/drafts/{job['draft']}").json()
                return patient, job, draft

        with ThreadPoolExecutor(max_workers=20) as pool:
            results = list(pool.map(one_launch, patients * 2))
        for patient, job, draft in results:
            assert job["state"] == "done", job
            assert job["patient"] == patient and draft["patient"] == patient
            assert draft["bundle"]["entry"][1]["resource"]["subject"]["reference"] == (
                f"Patient/{patient}"
            )
        drafts = {draft["id"]: draft for _, _, draft in results}
        for draft in drafts.values():
            (written,) = on_server(sandbox, "Composition", identifier=identifier_of(app, draft))
            assert written["subject"]["reference"] == f"Patient/{draft['patient']}"


def requeued(reason: str) -> float:
    """provenote_jobs_requeued_total{reason} in this process, as /metrics serves it."""
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("provenote_jobs_requeued_total", {"reason": reason}) or 0.0


def test_a_failed_job_keeps_its_stage_and_a_retry_continues(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-retry", fhir_max_retries=1) as (
        app,
        browser,
    ):
        sandbox.set_fault("500", count=1000, match="POST /Composition")
        try:
            job_id = launch(browser, sandbox)
            failed = wait_for(browser, app, job_id)
        finally:
            sandbox.set_fault("none", count=0)
        assert failed["state"] == "failed" and failed["stage"] == "writing_back"
        assert failed["error"].startswith("POST Composition: HTTP 500 (error ")
        assert "injected fault" not in failed["error"]  # the EHR's body is logged, not kept
        assert failed["draft"] is not None  # what was stored is kept
        assert browser.post(f"{app.base_url}/jobs/{job_id}/retry").status_code == 403
        retries = requeued("retried")
        token = browser.get(f"{app.base_url}/").text.split('name="csrf_token" value="')[1]
        retried = browser.post(
            f"{app.base_url}/jobs/{job_id}/retry", headers={"x-csrf-token": token.split('"')[0]}
        )
        assert retried.status_code == 202
        assert requeued("retried") == retries + 1
        done = wait_for(browser, app, job_id)
        assert done["state"] == "done" and done["draft"] == failed["draft"]
        assert done["attempts"] == 2
        browser.get(f"{app.base_url}/drafts/{done['draft']}")

        async def audit() -> list[tuple[str, str]]:
            from sqlalchemy import select

            from smartapp.core.tables import AuditRow

            async with app.state.database.sessions() as session:
                rows = await session.execute(
                    select(AuditRow.action, AuditRow.actor).where(
                        AuditRow.draft_id == done["draft"]
                    )
                )
                return [tuple(row) for row in rows]

        actions = [action for action, _ in app.call(audit())]
        assert actions == ["draft_created", "write_back_done", "draft_viewed"]
        assert app.call(audit())[-1][1].endswith("Practitioner/sandbox-physician")


def test_a_stage_slower_than_the_lease_is_not_taken_over(sandbox: Sandbox, tmp_path: Path) -> None:
    async def slow_summary(job_id: str, stage: str) -> None:
        if stage == "summarizing":
            await asyncio.sleep(2.0)

    with app_and_browser(
        sandbox, tmp_path, slow_summary, client_id="app-slow", job_lease_s=0.5, job_workers=2
    ) as (app, browser):
        job = wait_for(browser, app, launch(browser, sandbox))
        assert job["state"] == "done" and job["attempts"] == 1


def test_a_stopping_process_tells_progress_streams_to_reconnect_and_hands_its_job_back(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """SIGTERM: the open progress stream ends at once with "reconnect" (the browser follows
    the job through another process), and the job in hand goes back to the queue instead of
    waiting for its lease to run out."""
    import signal

    import uvicorn

    from launch.serving import StoppingServer
    from smartapp.core.db import Database

    reached = threading.Event()

    async def hold_at_ingesting(job_id: str, stage: str) -> None:
        if stage == "ingesting":
            reached.set()
            await asyncio.Event().wait()

    options = {"client_id": "app-stop"}
    handed_back = requeued("handed_back")
    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        with running_app(sandbox, tmp_path, hold_at_ingesting, **options) as app:
            job_id = launch(browser, sandbox)
            assert reached.wait(timeout=120)
            events = []
            with browser.stream("GET", f"{app.base_url}/jobs/{job_id}/events") as stream:
                lines = stream.iter_lines()
                events.append(next(line for line in lines if line.startswith("event:")))
                server = StoppingServer(uvicorn.Config(app=None), app.state)
                server.handle_exit(signal.SIGTERM, None)  # as uvicorn's signal handler does
                events += [line for line in lines if line.startswith(("event:", "retry:"))]
            assert events == ["event: progress", "event: reconnect", "retry: 1000"]
        database = Database(app.settings.database_dsn)

        async def stored() -> tuple[str, str]:
            try:
                async with database.sessions() as session:
                    job = await session.get(JobRow, job_id)
                    assert job is not None
                    return job.state, job.detail
            finally:
                await database.dispose()

        assert asyncio.run(stored()) == (
            "queued",
            "released by a worker that stopped; waiting for another",
        )
        assert requeued("handed_back") == handed_back + 1


def test_a_launch_can_be_followed_to_its_job_in_the_logs(sandbox: Sandbox, tmp_path: Path) -> None:
    """The launch's lines name its job; the job's lines (queued, started, each stage, ended)
    are structured events that carry the launching request's id; none names the patient."""
    import io
    import json
    import logging

    from smartapp.core.logs import JsonFormatter, OutgoingRequests

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())  # formats as each line is written, in its context
    provenote, outgoing = logging.getLogger("provenote"), logging.getLogger("httpx")
    provenote.addHandler(handler)
    outgoing.addHandler(handler)
    outgoing.addFilter(OutgoingRequests())  # as `serve` and `worker` configure it
    levels = provenote.level, outgoing.level
    provenote.setLevel(logging.INFO)
    outgoing.setLevel(logging.INFO)
    try:
        with app_and_browser(sandbox, tmp_path, client_id="app-logs") as (app, browser):
            job_id = launch(browser, sandbox)
            assert wait_for(browser, app, job_id)["state"] == "done"
    finally:
        provenote.removeHandler(handler)
        outgoing.removeHandler(handler)
        outgoing.filters.clear()
        provenote.setLevel(levels[0])
        outgoing.setLevel(levels[1])
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    (queued,) = [line for line in lines if line.get("event") == "job_queued"]
    assert queued["job_id"] == job_id and queued["request_id"]
    callback = next(line for line in lines if line.get("path", "").startswith("/callback/"))
    assert callback["job_id"] == job_id and callback["request_id"] == queued["request_id"]
    events = [line for line in lines if line.get("event", "").startswith("job_")]
    assert [line["event"] for line in events][:2] == ["job_queued", "job_started"]
    assert events[-1]["event"] == "job_ended" and events[-1]["state"] == "done"
    assert {"fetching", "ingesting"} <= {line.get("stage") for line in events}
    assert all(line["job_id"] == job_id for line in events)
    assert all(line["request_id"] == queued["request_id"] for line in events)
    requests = [line["message"] for line in lines if line["message"].startswith("FHIR ")]
    assert "FHIR GET Encounter 200" in requests and "FHIR GET metadata 200" in requests
    outgoing = [line["message"] for line in lines if line["logger"] == "httpx"]
    assert not any("?" in message or "/" in message for message in requests + outgoing)
    assert PATIENT not in stream.getvalue()
