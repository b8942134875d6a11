"""What operators expect: health and readiness probes, Prometheus metrics, JSON logs that never
carry a token, and the export of physicians' edits."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from litestar import Litestar, get
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from launch.cli import app as cli
from launch.sandbox.run import Sandbox
from pipeline.settings import PipelineSettings
from pipeline.summarizing.agentic import LoopSettings
from smartapp.core.errors import DraftStateError
from smartapp.core.handlers import EXCEPTION_HANDLERS
from smartapp.core.logs import REQUEST_ID, JsonFormatter, OutgoingRequests
from smartapp.core.registrations import callback_id
from smartapp.core.settings import Settings
from tests.review_support import ONE_FLAG, form_values, unflagged_ids
from tests.smart_support import RunningApp, app_and_browser, launch_job, running_app, wait_for

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"


def samples(base_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{base_url}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def delta(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_health_and_ready_answer_an_orchestrator(sandbox: Sandbox, tmp_path: Path) -> None:
    with running_app(sandbox, tmp_path) as app:
        assert httpx.get(f"{app.base_url}/health").json() == {"status": "alive"}
        ready = httpx.get(f"{app.base_url}/ready")
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"database": "ok", "queue": "ok"}
        assert app.state.jobs is not None
        app.call(app.state.jobs.queue.stop())  # the job workers are gone
        not_ready = httpx.get(f"{app.base_url}/ready")
        assert not_ready.status_code == 503
        assert not_ready.json()["checks"] == {"database": "ok", "queue": "failing"}
        assert not_ready.json()["failing"] == ["queue"]


@pytest.mark.parametrize(("database", "found"), [("hangs", "timed out"), ("is gone", "failing")])
def test_ready_and_metrics_answer_while_the_database_hangs_or_is_gone(
    sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    database: str,
    found: str,
) -> None:
    """A database that never answers costs /ready its check's timeout, not the probe's own, and
    one that refuses is reported as failing; /metrics still serves the process's counters and
    counts the scrape it could not complete."""
    with running_app(sandbox, tmp_path) as app:

        async def hangs() -> bool:
            if database == "is gone":
                raise OSError("connection refused")
            await asyncio.sleep(3600)
            return True

        def gone() -> object:
            raise OSError("connection refused")

        monkeypatch.setattr(app.state.database, "ping", hangs)
        monkeypatch.setattr(app.state.database, "sessions", gone)
        before = samples(app.base_url)
        ready = httpx.get(f"{app.base_url}/ready", timeout=30)
        scraped = httpx.get(f"{app.base_url}/metrics", timeout=30)
        after = samples(app.base_url)
    assert ready.status_code == 503
    assert ready.json()["checks"] == {"database": found, "queue": "ok"}
    assert ready.json()["failing"] == ["database"]
    assert scraped.status_code == 200 and "provenote_jobs_finished_total" in scraped.text
    assert delta(before, after, "provenote_metrics_scrape_errors_total") == 2


def test_ready_answers_at_once_while_a_hung_database_driver_takes_its_time_to_give_up(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver stuck on a dead connection does not stop when cancelled: it finishes its own
    clean-up first (about 10 s for asyncpg). /ready and /metrics answer without waiting for it,
    and the stuck check is reported as timed out."""
    released = asyncio.Event()

    async def stuck() -> bool:
        while not released.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # what a driver mid-clean-up does with a cancellation
        return True

    with running_app(sandbox, tmp_path) as app:
        monkeypatch.setattr(app.state.database, "ping", stuck)
        monkeypatch.setattr(app.state.database, "sessions", lambda: _StuckSession(released))
        ready = httpx.get(f"{app.base_url}/ready", timeout=30)
        scraped = httpx.get(f"{app.base_url}/metrics", timeout=30)
        assert app.state.loop is not None
        app.state.loop.call_soon_threadsafe(released.set)
    assert ready.status_code == 503
    assert ready.json()["checks"] == {"database": "timed out", "queue": "ok"}
    assert scraped.status_code == 200 and "provenote_jobs_finished_total" in scraped.text


class _StuckSession:
    """A session whose connection never answers, nor lets go when cancelled."""

    def __init__(self, released: asyncio.Event) -> None:
        self.released = released

    async def __aenter__(self) -> _StuckSession:
        while not self.released.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue
        raise OSError("the connection was dropped")

    async def __aexit__(self, *_: object) -> None:
        return None


def test_a_worker_publishes_no_installation_gauge_it_never_reads() -> None:
    """A worker's /metrics would show permanent zeros for the database-backed gauges (jobs by
    state, the oldest queued job, live workers) that only web processes read: it leaves them
    out, and a web process serves them."""
    from launch.sandbox.servers import free_port
    from smartapp.core.metrics import serve_worker_metrics

    port = free_port()
    server = serve_worker_metrics(port)
    try:
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        server.shutdown()
        server.server_close()
    assert "provenote_jobs_finished_total" in scraped and "provenote_jobs_requeued_total" in scraped
    for gauge in (
        "provenote_jobs",
        "provenote_oldest_queued_job_seconds",
        "provenote_live_workers",
    ):
        assert f"# HELP {gauge} " not in scraped


def test_ready_can_require_a_live_worker_of_the_shared_queue(
    sandbox: Sandbox, tmp_path: Path, postgres_url: str
) -> None:
    """Web processes on procrastinate only queue; with no `provenote worker` alive, /ready says
    so, and the metrics show no live worker."""
    with running_app(
        sandbox,
        tmp_path,
        database_url=postgres_url,
        job_queue="procrastinate",
        ready_requires_worker=True,
    ) as app:
        ready = httpx.get(f"{app.base_url}/ready", timeout=30)
        metrics = samples(app.base_url)
    assert ready.status_code == 503
    assert ready.json()["checks"] == {"database": "ok", "queue": "ok", "workers": "no live worker"}
    assert ready.json()["failing"] == ["workers"]
    assert metrics[("provenote_live_workers", ())] == 0


def test_a_workers_metrics_listen_on_loopback_and_answer_metrics_only() -> None:
    import socket

    from launch.sandbox.servers import free_port
    from smartapp.core.metrics import serve_worker_metrics

    port = free_port()
    server = serve_worker_metrics(port)
    try:
        assert server.server_address[0] == "127.0.0.1"  # not 0.0.0.0 unless asked
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics")
        assert scraped.status_code == 200 and "provenote_fhir_requests_total" in scraped.text
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 404
        outward = socket.gethostbyname(socket.gethostname())
        if not outward.startswith("127."):  # the machine's own address is not served
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"http://{outward}:{port}/metrics", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_count_a_drafting_job_its_stages_requests_and_write_back(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path) as (app, browser):
        before = samples(app.base_url)
        job = wait_for(browser, app, launch_job(browser, sandbox, PATIENT))
        assert job["state"] == "done", job
        after = samples(app.base_url)
    assert after[("provenote_jobs", (("state", "done"),))] >= 1
    assert delta(before, after, "provenote_jobs_finished_total", state="done") == 1
    for stage in ("fetching", "ingesting", "summarizing", "writing_back"):
        assert delta(before, after, "provenote_job_stage_seconds_count", stage=stage) == 1
    assert (
        delta(
            before,
            after,
            "provenote_fhir_requests_total",
            method="GET",
            resource_type="Patient",
            status="200",
        )
        >= 1
    )
    written = [
        key
        for key in after
        if key[0] == "provenote_write_backs_total" and delta(before, after, key[0], **dict(key[1]))
    ]
    assert len(written) == 1 and dict(written[0][1])["status"] == "done"
    # Labels name types and outcomes, never a patient.
    assert PATIENT not in str(after)


def test_log_lines_are_json_with_the_request_id_and_never_a_token() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("provenote.test-logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    token = REQUEST_ID.set("req-12345678")
    try:
        logger.warning(
            "EHR said: Authorization: Bearer abcdef123456 token %s; callback code=SplxlOBeZQQYbYS6",
            jwt,
        )
    finally:
        REQUEST_ID.reset(token)
        logger.removeHandler(handler)
    line = json.loads(stream.getvalue())
    assert line["request_id"] == "req-12345678" and line["level"] == "warning"
    assert jwt not in line["message"] and "abcdef123456" not in line["message"]
    assert "SplxlOBeZQQYbYS6" not in line["message"]
    assert line["message"].count("[redacted]") == 3


def test_an_outgoing_request_is_logged_by_method_host_and_status_never_its_url() -> None:
    """A search's query names the patient and the stay's dates: httpx's line keeps neither
    (the FHIR client's own line names the resource type)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    outgoing = logging.getLogger("httpx")
    outgoing.addHandler(handler)
    outgoing.addFilter(OutgoingRequests())
    level = outgoing.level
    outgoing.setLevel(logging.INFO)
    answer = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    try:
        with httpx.Client(transport=answer) as client:
            client.get(
                "https://ehr.example.org/fhir/r4/Encounter",
                params={"patient": "Patient/pt-4711", "date": "ge2024-03-01"},
            )
            client.get("https://ehr.example.org/fhir/r4/Patient/pt-4711")
            client.post("https://auth.example.org/oauth/token?state=abc")
    finally:
        outgoing.removeHandler(handler)
        outgoing.filters.clear()
        outgoing.setLevel(level)
    lines = [json.loads(line)["message"] for line in stream.getvalue().splitlines()]
    assert lines == [
        "HTTP Request: GET ehr.example.org 200",
        "HTTP Request: GET ehr.example.org 200",
        "HTTP Request: POST auth.example.org 200",
    ]


def test_each_request_gets_an_id_and_one_access_line_without_its_query(
    sandbox: Sandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_app(sandbox, tmp_path) as app, caplog.at_level(logging.INFO, "provenote.access"):
        kept = httpx.get(f"{app.base_url}/health", headers={"x-request-id": "lb-0123456789"})
        path = f"/callback/{callback_id(sandbox.fhir_base)}"
        made = httpx.get(f"{app.base_url}{path}", params={"code": "SECRETCODE123", "state": "x"})
        # The access line is written once the answer has gone out: wait for it.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            getattr(record, "path", None) == path for record in caplog.records
        ):
            time.sleep(0.02)
    assert kept.headers["x-request-id"] == "lb-0123456789"
    # A balancer's health probe is logged at DEBUG only.
    assert not any(getattr(record, "path", None) == "/health" for record in caplog.records)
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])
    lines = [json.loads(JsonFormatter().format(record)) for record in caplog.records]
    callback = next(line for line in lines if line.get("path") == path)
    assert "SECRETCODE123" not in json.dumps(lines)
    assert callback["method"] == "GET" and callback["status"] == made.status_code


def test_export_edits_writes_each_edit_with_its_evidence_and_a_pseudonymous_editor(
    app: RunningApp, review_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        job = wait_for(browser, app, launch_job(browser, review_sandbox, ONE_FLAG))
        draft = job["draft"]
        page = browser.get(f"{app.base_url}/drafts/{draft}").text
        stored = app.call(app.state.drafts.load(draft))
        patient = stored.evidence["facts"]["patient_info"][0]["attributes"]
        # The sentence that names the patient: what an export must not carry by default.
        target = next(
            sentence["id"]
            for section in stored.summary["sections"]
            for sentence in section["sentences"]
            if patient["birth_date"] in sentence["text"] and sentence["id"] in unflagged_ids(page)
        )
        answer = browser.post(
            f"{app.base_url}/drafts/{draft}/sentences/{target}",
            data=form_values(page) | {"action": "edit", "text": "Discharged home, stable."},
        )
        assert answer.status_code == 200
    monkeypatch.setenv("PROVENOTE_DATA_DIR", str(app.settings.data_dir))
    monkeypatch.delenv("PROVENOTE_DATABASE_URL", raising=False)
    out = tmp_path / "edits.jsonl"
    result = CliRunner().invoke(cli, ["export-edits", "-o", str(out)])
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    from smartapp.core.keys import app_secret, pseudonym_secret
    from smartapp.drafts.deidentify import patient_deidentifier
    from smartapp.drafts.edits_export import editor_pseudonym

    pseudonyms = patient_deidentifier(pseudonym_secret(app.settings), ONE_FLAG, None, None)
    assert record["draft"] == pseudonyms.pseudonym(draft) and record["sentence"] == target
    assert record["action"] == "edit" and record["after"] == "Discharged home, stable."
    assert record["before"] and record["section"]
    assert record["citations"] and all("/" in ref for ref in record["cited_resources"])
    assert record["drafted_verdicts"]["checks"] is not None
    assert re.fullmatch(r"editor-[0-9a-f]{64}", record["editor"])  # the whole HMAC
    assert review_sandbox.practitioner.split("/")[-1] not in json.dumps(record)
    # No direct identifier of the patient by default, though the edited sentence named them.
    exported = json.dumps(record)
    assert "[date of birth]" in record["before"] and "[name]" in record["before"]
    assert patient["birth_date"] not in exported and ONE_FLAG not in exported
    assert all(part not in exported for part in patient["name"].split())
    # Nor the stay's ids and dates: ids by pseudonym, dates moved by the patient's offset.
    encounter = stored.encounter
    assert encounter and encounter not in exported and draft not in exported
    assert record["encounter"] == pseudonyms.pseudonym(encounter)
    stay = next(
        fact["attributes"]
        for fact in stored.evidence["facts"]["encounter"]
        if fact["attributes"]["kind"] == "stay"
    )
    admitted = stay["start"][:10]
    assert admitted not in exported
    # The pseudonym's key is its own: not the CSRF secret.
    actor = review_sandbox.practitioner
    assert record["editor"] != editor_pseudonym(app_secret(app.settings), actor)
    assert app_secret(app.settings) != pseudonym_secret(app.settings)
    full = CliRunner().invoke(cli, ["export-edits", "-o", str(out), "--with-identifiers"])
    assert full.exit_code == 0 and patient["birth_date"] in out.read_text()
    assert json.loads(out.read_text())["draft"] == draft

    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
    later = CliRunner().invoke(cli, ["export-edits", "-o", str(out), "--since", tomorrow])
    assert later.exit_code == 0 and out.read_text() == ""


def test_every_failure_gets_one_answer_in_the_form_its_path_speaks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @get("/drafts/boom")
    async def page_fails() -> str:
        raise KeyError("note text: patient reports chest pain")

    @get("/jobs/stale")
    async def stale() -> str:
        raise DraftStateError("this draft changed since you opened it")

    @get("/fhir/Composition")
    async def api_fails() -> str:
        raise RuntimeError("token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")

    app = Litestar(
        [page_fails, stale, api_fails], exception_handlers=EXCEPTION_HANDLERS, logging_config=None
    )
    with TestClient(app) as client, caplog.at_level(logging.ERROR, "provenote"):
        page = client.get("/drafts/boom")
        refused = client.get("/jobs/stale")
        outcome = client.get("/fhir/Composition")
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert "chest pain" not in page.text
    error_id = re.search(r"error ([0-9a-f]{12})", page.text).group(1)
    assert any(error_id in record.getMessage() for record in caplog.records)  # the log has it
    assert refused.status_code == 409
    assert refused.json() == {"error": "this draft changed since you opened it"}
    assert outcome.status_code == 500 and outcome.json()["resourceType"] == "OperationOutcome"
    assert "eyJ" not in outcome.text


def test_one_settings_object_carries_the_pipeline_and_the_app(monkeypatch) -> None:
    """One ``PROVENOTE_*`` prefix: the pipeline's knobs and the app's come from one object,
    which the pipeline takes as its own settings."""
    monkeypatch.setenv("PROVENOTE_FOCUS_RATIO", "0.3")
    monkeypatch.setenv("PROVENOTE_OCR_DPI", "150")
    monkeypatch.setenv("PROVENOTE_JOB_WORKERS", "5")
    settings = Settings()
    assert isinstance(settings, PipelineSettings)
    assert (settings.focus_ratio, settings.ocr_dpi, settings.job_workers) == (0.3, 150, 5)
    assert LoopSettings.from_settings(settings).ratio == 0.3


def test_purge_removes_pulled_records_when_due_and_audits_each(
    app: RunningApp, review_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record goes once its draft is signed, or once the job ended longer ago than the
    retention; the draft and its audit trail stay, and the removal is itself audited."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import update

    from smartapp.core.statuses import DraftStatus
    from smartapp.core.tables import DraftRow
    from smartapp.jobs.retention import purge_records

    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        job = wait_for(browser, app, launch_job(browser, review_sandbox, ONE_FLAG))
    jobs = app.state.jobs
    assert jobs is not None
    drafts, repository = app.state.drafts, jobs.jobs
    now = datetime.now(UTC)
    assert app.call(purge_records(repository, drafts, 30, now)) == []  # fresh and unsigned
    assert app.call(jobs.get(job["id"])).record is not None
    monkeypatch.setenv("PROVENOTE_DATA_DIR", str(app.settings.data_dir))
    monkeypatch.delenv("PROVENOTE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PROVENOTE_RECORD_RETENTION_DAYS", "0")
    dry = CliRunner().invoke(cli, ["purge", "--dry-run"])
    assert dry.exit_code == 0 and f"job {job['id']}: the job ended more than 0 days" in dry.output
    assert app.call(jobs.get(job["id"])).record is not None  # a dry run removes nothing

    async def signed() -> None:  # as signing leaves it, without the EHR round trip
        async with app.state.database.sessions() as session, session.begin():
            await session.execute(
                update(DraftRow).where(DraftRow.id == job["draft"]).values(status="final")
            )

    app.call(signed())
    (purged,) = app.call(purge_records(repository, drafts, 30, now))
    assert (purged.job_id, purged.draft_id) == (job["id"], job["draft"])
    assert purged.reason == "its draft is signed"
    assert app.call(jobs.get(job["id"])).record is None
    assert app.call(drafts.load(job["draft"])).status == DraftStatus.FINAL  # the draft stays
    trail = app.call(drafts.audit_trail(job["draft"]))
    assert [event.action for event in trail if event.actor == "provenote purge"] == [
        "record_purged"
    ]
    assert app.call(purge_records(repository, drafts, 0, now + timedelta(days=1))) == []
