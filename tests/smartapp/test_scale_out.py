"""Many processes on existing engines: two web replicas behind the shipped nginx site, two
worker processes, one PostgreSQL holding the app's tables and the procrastinate queue.

Nothing a request needs lives in one process: the launch's pending state, the session, the job,
its progress events and the refresh of its tokens are all shared through the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest

from launch.sandbox.balancer import nginx_binary
from launch.sandbox.cluster import Cluster, cluster, temporary_postgres
from launch.sandbox.copies import patient_copy
from launch.sandbox.run import SAMPLES, Sandbox
from smartapp.access.discovery import discover
from smartapp.access.oauth import TokenResponse
from smartapp.access.sessions import LaunchContext, StoredTokens
from smartapp.core.db import libpq_dsn
from smartapp.core.settings import Settings
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import pull_record
from smartapp.state import new_state
from tests.smart_support import json_answer, launch_job, wait_for

# Load on a 2-core machine: run alone, after the parallel suite (launch/test.sh), so that neither
# these tests' load nor the suite's slows the other past its timeouts.
pytestmark = pytest.mark.serial

SOURCE = "c1f85d12-7225-ae0a-d9a2-67fbd365c447"
PATIENTS = 25


def _ids(bundle: dict) -> set[str]:
    return {entry["resource"]["id"] for entry in bundle["entry"] if "id" in entry["resource"]}


def _latest_stay(bundle: dict) -> str:
    stays = [
        entry["resource"]
        for entry in bundle["entry"]
        if entry["resource"]["resourceType"] == "Encounter"
        and entry["resource"]["class"]["code"] == "IMP"
    ]
    return max(stays, key=lambda stay: stay["period"]["start"])["id"]


def _stay_record(original: dict, folder: Path) -> dict:
    """The sample cut to what a pull of its latest stay reads. The sandbox's in-memory FHIR
    server scans every stored resource of a type on each search, so 25 whole histories would
    make this a test of its scans (about 9 s of its single thread per pull) rather than of ours."""
    (folder / f"{SOURCE}.json").write_text(json.dumps(original), encoding="utf-8")
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[folder]) as sandbox:

        async def pull() -> dict:
            headers = {"x-admin-token": sandbox.admin_token}
            async with httpx.AsyncClient(headers=headers, timeout=60) as http:
                return await pull_record(FhirClient(sandbox.fhir_base, http), SOURCE)

        pulled = _ids(asyncio.run(pull()))
    return original | {"entry": [e for e in original["entry"] if e["resource"]["id"] in pulled]}


@pytest.fixture(scope="module")
def many_patients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, dict]]:
    """A sandbox holding 25 patients, each a copy of one sample's latest stay under ids of its
    own; with the ids of each patient's resources and their latest inpatient stay."""
    folder = tmp_path_factory.mktemp("patients")
    original = _stay_record(
        json.loads((SAMPLES / f"{SOURCE}.json").read_bytes()), tmp_path_factory.mktemp("sample")
    )
    owned = {}
    for number in range(PATIENTS):
        bundle = patient_copy(original, f"scale-{number}")
        (patient,) = [
            e["resource"]["id"]
            for e in bundle["entry"]
            if e["resource"]["resourceType"] == "Patient"
        ]
        owned[patient] = (_ids(bundle), _latest_stay(bundle))
        (folder / f"{patient}.json").write_text(json.dumps(bundle), encoding="utf-8")
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[folder]) as sandbox:
        yield sandbox, owned


@pytest.fixture(scope="module")
def health_system(
    many_patients: tuple[Sandbox, dict], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    sandbox, _ = many_patients
    if nginx_binary() is None:
        pytest.skip("nginx is not installed: the layout runs behind the shipped nginx site")
    with (
        temporary_postgres() as url,
        cluster(sandbox, tmp_path_factory.mktemp("cluster"), url) as running,
    ):
        yield running


def _query(cluster: Cluster, sql: str, *args: object) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(libpq_dsn(cluster.database_url))
        try:
            return await connection.fetch(sql, *args)
        finally:
            await connection.close()

    return asyncio.run(run())


def _running_worker(cluster: Cluster, job_id: str) -> str:
    """The name of the worker running the job, once one is: the jobs table names it as its
    --name says."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        (row,) = _query(cluster, "SELECT state, worker FROM jobs WHERE id=$1", job_id)
        if row["state"] == "running" and row["worker"]:
            name: str = row["worker"]
            return name
        time.sleep(0.05)
    raise AssertionError(f"no worker took job {job_id}")


def _read_events(url: str, cookies: dict[str, str], into: list[dict]) -> None:
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=60), cookies=cookies) as client,
        client.stream("GET", url) as stream,
    ):
        for line in stream.iter_lines():
            if line.startswith("data:"):
                into.append(json.loads(line[5:]))
                if into[-1].get("state") in {"done", "failed"}:
                    return


@contextmanager
def slow_ehr_then_a_new_worker(sandbox: Sandbox, health_system: Cluster) -> Iterator[None]:
    """Slow answers from the EHR keep a job in hand long enough to stop its worker; then the
    EHR answers at full speed again and a new worker takes the stopped one's place."""
    sandbox.set_fault("slow", count=1_000_000, delay_ms=400)
    try:
        yield
    finally:
        sandbox.set_fault("none", count=0)
        health_system.start_worker()


def written_once(health_system: Cluster, job_id: str) -> str:
    """The job delivered one draft, written back once: the id of the note in the EHR."""
    drafts = _query(health_system, "SELECT id FROM drafts WHERE job_id = $1", job_id)
    assert len(drafts) == 1
    written = _query(
        health_system, "SELECT remote_id FROM write_backs WHERE draft_id = $1", drafts[0]["id"]
    )
    assert len(written) == 1
    return str(written[0]["remote_id"])


def test_a_launch_spans_both_web_processes_and_survives_a_killed_worker(
    health_system: Cluster, many_patients: tuple[Sandbox, dict]
) -> None:
    sandbox, owned = many_patients
    patient = sorted(owned)[0]
    with slow_ehr_then_a_new_worker(sandbox, health_system):
        with httpx.Client(follow_redirects=True, timeout=120) as browser:
            first = len(health_system.balancer.routed())
            job_id = launch_job(browser, sandbox, patient, encounter=owned[patient][1])
            steps = health_system.balancer.routed()[first:]
            launched = next(index for path, index in steps if path == "/launch")
            called_back = next(index for path, index in steps if path.startswith("/callback/"))
            assert launched != called_back  # the launch's state crossed processes

            # The progress stream is read from the first web process; the job runs elsewhere.
            events: list[dict] = []
            stream_url = f"{health_system.web_urls[0]}/jobs/{job_id}/events"
            reader = threading.Thread(
                target=_read_events, args=(stream_url, dict(browser.cookies), events), daemon=True
            )
            reader.start()

            killed_name = _running_worker(health_system, job_id)
            killed = health_system.worker_named(killed_name)
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait(timeout=10)
            sandbox.set_fault("none", count=0)

            job = wait_for(browser, health_system, job_id, timeout_s=180)
            reader.join(timeout=60)
        assert job["state"] == "done", job
        assert job["attempts"] >= 2
        (row,) = _query(health_system, "SELECT worker FROM jobs WHERE id = $1", job_id)
        assert row["worker"] != killed_name and row["worker"].startswith("worker-")

        # Finished once: one draft, one write-back, one note in the EHR.
        remote_id = written_once(health_system, job_id)
        notes = httpx.get(
            f"{sandbox.fhir_base}/Composition",
            params={"subject": f"Patient/{patient}"},
            headers={"x-admin-token": sandbox.admin_token},
        ).json()
        assert [entry["resource"]["id"] for entry in notes.get("entry", [])] == [remote_id]

        stages = [event.get("stage") for event in events]
        assert stages[-1] == "done"
        # Stages between the first event and the last came as notices from the worker.
        assert {"ingesting", "summarizing", "writing_back"} & set(stages[1:-1])


def test_a_worker_stopped_with_sigterm_hands_its_job_back_and_the_job_ends_once(
    health_system: Cluster, many_patients: tuple[Sandbox, dict]
) -> None:
    """SIGTERM: the worker takes no new job, gives the one in hand its grace period (2 s in the
    cluster), hands it back to the queue and exits; another worker finishes it, once."""
    sandbox, owned = many_patients
    patient = sorted(owned)[1]
    with slow_ehr_then_a_new_worker(sandbox, health_system):
        with httpx.Client(follow_redirects=True, timeout=120) as browser:
            job_id = launch_job(browser, sandbox, patient, encounter=owned[patient][1])
            stopped_name = _running_worker(health_system, job_id)
            stopped = health_system.worker_named(stopped_name)
            os.kill(stopped.pid, signal.SIGTERM)
            assert stopped.wait(timeout=60) == 0  # it ends, by itself and cleanly
            sandbox.set_fault("none", count=0)
            job = wait_for(browser, health_system, job_id, timeout_s=180)
        assert job["state"] == "done" and job["attempts"] >= 2, job
        (row,) = _query(health_system, "SELECT worker FROM jobs WHERE id = $1", job_id)
        assert row["worker"] != stopped_name and row["worker"].startswith("worker-")
        logged = "".join(path.read_text() for path in health_system.logs.glob("worker-*.log"))
        assert f"job {job_id} released: this worker is stopping" in logged
        written_once(health_system, job_id)


def test_fifty_concurrent_launches_for_25_patients_all_complete_unmixed(
    health_system: Cluster, many_patients: tuple[Sandbox, dict]
) -> None:
    sandbox, owned = many_patients
    launches = [patient for patient in sorted(owned) for _ in range(2)]

    def launch_and_wait(patient: str) -> tuple[str, dict, dict]:
        with httpx.Client(follow_redirects=True, timeout=300) as browser:
            job_id = launch_job(browser, sandbox, patient, encounter=owned[patient][1])
            job = wait_for(browser, health_system, job_id, timeout_s=600)
            draft = browser.get(f"{health_system.base_url}/api/drafts/{job.get('draft')}")
            return patient, job, json_answer(draft)

    with ThreadPoolExecutor(max_workers=len(launches)) as pool:
        results = list(pool.map(launch_and_wait, launches))

    assert len(results) == 50
    for patient, job, draft in results:
        assert job["state"] == "done" and job["patient"] == patient, job
        assert draft["patient"] == patient
        (composition,) = [
            entry["resource"]
            for entry in draft["bundle"]["entry"]
            if entry["resource"]["resourceType"] == "Composition"
        ]
        assert composition["subject"]["reference"] == f"Patient/{patient}"
        others = set().union(*(ids for who, (ids, _) in owned.items() if who != patient))
        mentioned = json.dumps(draft["bundle"])
        assert not any(other in mentioned for other in others)
    evidence = _query(
        health_system,
        "SELECT patient, evidence FROM drafts WHERE patient = ANY($1::text[])",
        list(owned),
    )
    for row in evidence:
        state = json.loads(row["evidence"])
        cited = {
            ref["resource"].split("/")[-1]
            for document in state["documents"]
            for ref in document["sources"]
        }
        assert cited <= owned[row["patient"]][0]


def _on_postgres(sandbox: Sandbox, folder: Path, database_url: str, client_id: str) -> Settings:
    """An app's settings on ``database_url``, registered with the sandbox as ``client_id``."""
    return sandbox.configure(
        Settings(
            base_url="http://127.0.0.1:1",
            data_dir=folder,
            database_url=database_url,
            client_id=client_id,
        )
    )


def test_two_processes_never_refresh_one_token_twice(
    sandbox: Sandbox, tmp_path: Path, postgres_url: str
) -> None:
    """The sandbox's refresh tokens are single-use, as many EHRs' are: a second refresh with the
    same token would be refused and end the session."""
    settings = _on_postgres(sandbox, tmp_path, postgres_url, "provenote-refresh")
    registration = settings.registrations[0]
    patient = sandbox.auth.default_patient or ""
    issued = TokenResponse.model_validate(
        sandbox.auth.issue_for_tests(
            "provenote-refresh", "launch/patient patient/*.rs offline_access", patient
        )
    )

    async def scenario() -> list[str | None]:
        # Two app states on one database: two processes, each with its own locks and pool.
        first, second = new_state(settings), new_state(settings)
        try:
            await first.database.migrate()
            config = await discover(first.http, registration)
            context = LaunchContext(iss=registration.issuer, patient=patient, scope=issued.scope)
            expired = StoredTokens(config=config, tokens=issued, expires_at=time.time() - 1)
            await first.store.save("shared-session", context, expired)
            getters = [state.access.token_getter("shared-session") for state in (first, second)]
            getters *= 3
            return await asyncio.gather(*(get(False) for get in getters))
        finally:
            for state in (first, second):
                await state.http.aclose()
                await state.database.dispose()

    tokens = asyncio.run(scenario())
    assert None not in tokens
    assert len(set(tokens)) == 1 and tokens[0] != issued.access_token


def test_many_requests_of_current_sessions_share_a_small_pool(
    sandbox: Sandbox, tmp_path: Path, postgres_url: str
) -> None:
    """A request with a current token takes no refresh lock: the lock holds a connection while
    the tokens are read with another, so fifty launches at once used to exhaust the pool (and
    time out callbacks with a 500)."""
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    settings = _on_postgres(sandbox, tmp_path, postgres_url, "provenote-pool")
    registration = settings.registrations[0]
    patient = sandbox.auth.default_patient or ""
    issued = TokenResponse.model_validate(
        sandbox.auth.issue_for_tests("provenote-pool", "launch/patient patient/*.rs", patient)
    )

    async def scenario() -> list[str | None]:
        state = new_state(settings)
        database = state.database
        await database.migrate()
        # One connection in all: a request that needed two at once would wait for itself.
        await database.engine.dispose()
        database.engine = create_async_engine(
            database.dsn, pool_size=1, max_overflow=0, pool_timeout=5
        )
        database.sessions = async_sessionmaker(database.engine, expire_on_commit=False)
        try:
            config = await discover(state.http, registration)
            context = LaunchContext(iss=registration.issuer, patient=patient, scope=issued.scope)
            for number in range(10):
                current = StoredTokens(config=config, tokens=issued, expires_at=time.time() + 3600)
                await state.store.save(f"session-{number}", context, current)
            getters = [state.access.token_getter(f"session-{n}") for n in range(10)]
            return await asyncio.gather(*(get(False) for get in getters * 3))
        finally:
            await state.http.aclose()
            await database.dispose()

    assert asyncio.run(scenario()) == [issued.access_token] * 30
