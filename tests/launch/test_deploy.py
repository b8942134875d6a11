"""The deployment files in deploy/: the nginx site passes nginx's own check and serves the app as
it must (progress streams unbuffered, a request id per request, no metrics from outside), and the
systemd units pass systemd-analyze verify, each with a data directory it may write; the shipped
env file names only settings and passes check-config once its secrets are filled in."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from launch.sandbox.balancer import main_config, nginx, nginx_binary, nginx_command, site_for
from launch.sandbox.run import Sandbox
from launch.sandbox.servers import free_port
from launch.sandbox.tls import Certificate, loopback_certificate
from launch.serving import APP_KEEP_ALIVE_S
from smartapp.core.settings import unknown_variables
from tests.attack_support import as_json, recording_server
from tests.conftest import ROOT
from tests.smart_support import launch_job, running_app

DEPLOY = ROOT / "deploy"
needs_nginx = pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed")


def trusting(certificate: Certificate) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate.cert_file))


def test_nginx_drops_idle_app_connections_before_the_app_does() -> None:
    # Otherwise nginx may send a request on a connection the app has just closed: a 502 (seen
    # under the fifty-launch load test). The balancer keeps the shipped rule as it is.
    for site in ((DEPLOY / "nginx" / "provenote.conf").read_text(), site_for([9001], 9000, None)):
        upstream = re.search(r"upstream provenote \{(.*?)\}", site, re.S)
        assert upstream is not None
        timeout = re.search(r"keepalive_timeout (\d+)s;", upstream.group(1))
        assert timeout is not None and int(timeout.group(1)) < APP_KEEP_ALIVE_S


def test_the_balancer_keeps_the_shipped_keep_alive_unless_a_bench_compares_another() -> None:
    """bench/keepalive_race.py runs nginx's default beside the shipped rule; nothing else may."""
    shipped = site_for([9001], 9000, None)
    assert "keepalive_timeout 4s;" in shipped
    compared = site_for([9001], 9000, None, idle_upstream_s=60)
    assert "keepalive_timeout 60s;" in compared and "keepalive_timeout 4s;" not in compared


@needs_nginx
def test_the_nginx_site_passes_nginx_t(tmp_path: Path) -> None:
    certificate = loopback_certificate(tmp_path)
    site = tmp_path / "provenote.conf"
    site.write_text(site_for([8000, 8001], free_port(), certificate, tmp_path))
    config = tmp_path / "nginx.conf"
    config.write_text(main_config(tmp_path, site))
    checked = subprocess.run(
        [*nginx_command(tmp_path, config), "-t"], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


@needs_nginx
def test_the_shipped_access_log_names_the_path_never_the_launch_or_oauth_values(
    tmp_path: Path,
) -> None:
    secrets = {"launch": "L4UNCH-SECRET", "code": "C0DE-SECRET", "state": "ST4TE-SECRET"}
    with nginx([free_port()], tmp_path) as front:  # no app behind it: nginx still logs
        for path in ("/launch", "/callback"):
            httpx.get(f"{front.base_url}{path}", params=secrets, timeout=10)
    logged = (tmp_path / "provenote.access.log").read_text(encoding="utf-8")
    assert "/launch" in logged and "/callback" in logged
    for value in secrets.values():
        assert value not in logged
    assert not re.search(r"\$(?:request|args|query_string|request_uri)\b", _log_format())


def _log_format() -> str:
    site = (DEPLOY / "nginx" / "provenote.conf").read_text(encoding="utf-8")
    found = re.search(r"log_format provenote_redacted(.*?);", site, re.S)
    assert found is not None
    return found.group(1)


@needs_nginx
def test_nginx_serves_the_app_and_passes_a_progress_stream_on_as_it_is_written(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A held job's first progress event reaches the browser through nginx while the job is
    still running (the site turns buffering off for progress streams, as the app's
    ``X-Accel-Buffering: no`` also asks); the request id is nginx's; metrics stay inside."""
    reached = threading.Event()

    async def hold_at_ingesting(job_id: str, stage: str) -> None:
        if stage == "ingesting":
            reached.set()
            await asyncio.Event().wait()

    certificate = loopback_certificate(tmp_path)
    with (
        running_app(sandbox, tmp_path / "app", hold_at_ingesting, client_id="app-nginx") as app,
        nginx([int(app.base_url.rsplit(":", 1)[1])], tmp_path / "nginx", certificate) as front,
        httpx.Client(follow_redirects=True, timeout=60, verify=trusting(certificate)) as browser,
    ):
        health = browser.get(f"{front.base_url}/health")
        assert health.status_code == 200 and health.json() == {"status": "alive"}
        # nginx's $request_id, accepted by the app as a clean id and echoed back.
        assert re.fullmatch(r"[0-9a-f]{32}", health.headers["x-request-id"])
        assert browser.get(f"{front.base_url}/metrics").status_code == 404
        job_id = launch_job(browser, sandbox, "0d4fcba9-b3c9-1765-4a0f-120004c84bb3")
        assert reached.wait(timeout=120)
        url = f"{front.base_url}/jobs/{job_id}/events"
        with browser.stream("GET", url, timeout=httpx.Timeout(20, read=20)) as stream:
            first = next(line for line in stream.iter_lines() if line.startswith("event:"))
        assert first == "event: progress"


def test_the_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    provenote = Path(sys.executable).with_name("provenote")
    assert provenote.exists()
    for unit in (DEPLOY / "systemd").iterdir():
        text = unit.read_text(encoding="utf-8")
        (tmp_path / unit.name).write_text(
            text.replace("/opt/provenote/.venv/bin/provenote", str(provenote))
        )
    units = [
        "provenote-serve@8000.service",
        "provenote-worker@9100.service",
        "provenote-migrate.service",
        "provenote-purge.service",
        "provenote-purge.timer",
    ]
    checked = subprocess.run(
        [analyze, "verify", "--man=no", *(str(tmp_path / unit) for unit in units)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr.strip() == "", checked.stderr


def _service_units() -> list[Path]:
    return sorted((DEPLOY / "systemd").glob("*.service"))


def test_every_unit_sets_a_data_directory_it_may_write() -> None:
    """A unit that left PROVENOTE_DATA_DIR to the default would write under a read-only
    filesystem (ProtectSystem=strict) and exit as it starts."""
    for unit in _service_units():
        text = unit.read_text(encoding="utf-8")
        state = re.search(r"^StateDirectory=(\S+)$", text, re.MULTILINE)
        data_dir = re.search(r"^Environment=PROVENOTE_DATA_DIR=(\S+)$", text, re.MULTILINE)
        assert state and data_dir, unit.name
        assert data_dir[1] == f"/var/lib/{state[1]}", unit.name
        assert f"ReadWritePaths={data_dir[1]}" in text, unit.name
        assert text.index("Environment=PROVENOTE_DATA_DIR") < text.index("EnvironmentFile="), (
            "the env file must be able to override the unit's default"
        )


def _env_file(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    pairs = [line.split("=", 1) for line in lines if line.strip() and not line.startswith("#")]
    return {name: value for name, value in pairs}


def _check_config(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROVENOTE_")}
    return subprocess.run(
        [sys.executable, "-m", "launch.cli", "check-config"],
        cwd=ROOT,
        env=clean | environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_shipped_env_file_names_only_settings_and_refuses_to_run_until_its_secrets_are_set(
    tmp_path: Path,
) -> None:
    shipped = _env_file(DEPLOY / "provenote.env.example")
    assert unknown_variables(shipped) == []
    assert shipped["PROVENOTE_READY_REQUIRES_WORKER"] == "true"
    assert shipped["PROVENOTE_JOB_QUEUE"] == "procrastinate"
    local = {"PROVENOTE_DATA_DIR": str(tmp_path), "PROVENOTE_DATABASE_URL": "sqlite+aiosqlite://"}
    no_file = _check_config(shipped | local | {"PROVENOTE_JOB_QUEUE": "in_process"})
    assert no_file.returncode == 2 and "Traceback" not in no_file.stderr
    assert (
        "PROVENOTE_REGISTRATIONS_FILE=/etc/provenote/registrations.json cannot be read: "
        "No such file or directory" in no_file.stderr
    )
    registrations = tmp_path / "registrations.json"
    registrations.write_text('[{"issuer": "https://ehr.example.org/fhir"}]')
    incomplete = _check_config(
        shipped | local | {"PROVENOTE_REGISTRATIONS_FILE": str(registrations)}
    )
    assert f"PROVENOTE_REGISTRATIONS_FILE={registrations}: registration 1 cannot work " in (
        incomplete.stderr
    )
    assert "client_id: Field required" in incomplete.stderr
    registrations.write_text(
        '[{"issuer": "https://ehr.example.org/fhir", "client_id": "provenote"}]'
    )
    local["PROVENOTE_REGISTRATIONS_FILE"] = str(registrations)
    refused = _check_config(shipped | local | {"PROVENOTE_JOB_QUEUE": "in_process"})
    assert refused.returncode == 2
    assert "PROVENOTE_TOKEN_ENCRYPTION_KEY is not a Fernet key" in refused.stderr


def test_the_shipped_env_file_passes_check_config_once_filled_in(
    tmp_path: Path, postgres_url: str
) -> None:
    registrations = tmp_path / "registrations.json"
    registrations.write_text(
        json.dumps([{"issuer": "https://ehr.example.org/fhir", "client_id": "provenote"}])
    )
    filled = _env_file(DEPLOY / "provenote.env.example") | {
        "PROVENOTE_DATA_DIR": str(tmp_path / "data"),
        "PROVENOTE_DATABASE_URL": postgres_url,
        "PROVENOTE_REGISTRATIONS_FILE": str(registrations),
        "PROVENOTE_TOKEN_ENCRYPTION_KEY": Fernet.generate_key().decode("ascii"),
        "PROVENOTE_APP_SECRET": secrets.token_hex(32),
        "PROVENOTE_SIGNING_KEY_FILE": str(tmp_path / "client-RS384.pem"),
    }
    checked = _check_config(filled)
    assert checked.returncode == 0, checked.stderr
    assert "1 EHR registrations, procrastinate on PostgreSQL" in checked.stdout


@contextlib.contextmanager
def _process_answering_ready(status: int) -> Iterator[int]:
    """A process whose /ready answers ``status`` (404 elsewhere): its port."""
    with recording_server() as process:
        verdict = {"status": "ready" if status == 200 else "not ready"}
        process.routes["/ready"] = lambda _: as_json(verdict, status)
        yield int(process.url.rsplit(":", 1)[1])


@needs_nginx
def test_the_balancer_never_hides_a_process_that_is_not_ready(tmp_path: Path) -> None:
    """Behind the shipped site, /ready is answered by one process and never retried on the next
    (which would turn a 503 into a 200), and /ready/PORT reaches each process by its port, so a
    health check sees every process as it is."""
    with (
        _process_answering_ready(200) as ready,
        _process_answering_ready(503) as not_ready,
        nginx([ready, not_ready], tmp_path / "nginx") as front,
    ):
        through = [httpx.get(f"{front.base_url}/ready").status_code for _ in range(6)]
        each = {
            port: httpx.get(f"{front.base_url}/ready/{port}").status_code
            for port in (ready, not_ready)
        }
        other_port = httpx.get(f"{front.base_url}/ready/{free_port()}").status_code
    assert sorted(set(through)) == [200, 503]
    assert each == {ready: 200, not_ready: 503}
    assert other_port == 404  # another port is never reached: the path goes to the app
