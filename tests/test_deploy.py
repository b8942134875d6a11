"""The deployment files in deploy/: the nginx site passes nginx's own check and serves the app as
it must (progress streams unbuffered, a request id per request, no metrics from outside), and the
systemd units pass systemd-analyze verify."""

from __future__ import annotations

import asyncio
import re
import shutil
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from launch.sandbox.balancer import main_config, nginx, nginx_binary, nginx_command, site_for
from launch.sandbox.run import Sandbox, free_port
from launch.sandbox.tls import Certificate, loopback_certificate
from launch.serving import APP_KEEP_ALIVE_S
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
