"""The deployment files in deploy/: the nginx site passes nginx's own check and serves the app as
it must (progress streams unbuffered, a request id per request, no metrics from outside), and the
systemd units pass systemd-analyze verify."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from launch.sandbox.run import Sandbox, free_port
from launch.sandbox.tls import Certificate, loopback_certificate
from tests.conftest import ROOT
from tests.smart_support import launch_job, running_app

DEPLOY = ROOT / "deploy"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed")


def trusting(certificate: Certificate) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate.cert_file))


def site_for(upstream_port: int, http_port: int, https_port: int, certificate: Certificate) -> str:
    """The shipped site, on loopback ports, with a test certificate: nothing else changed."""
    site = (DEPLOY / "nginx" / "provenote.conf").read_text(encoding="utf-8")
    site = re.sub(
        r"upstream provenote \{.*?\}",
        f"upstream provenote {{\n    server 127.0.0.1:{upstream_port};\n    keepalive 32;\n}}",
        site,
        flags=re.S,
    )
    site = site.replace("listen 80;", f"listen 127.0.0.1:{http_port};")
    site = site.replace("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl")
    site = site.replace("/etc/ssl/provenote/fullchain.pem", str(certificate.cert_file))
    return site.replace("/etc/ssl/provenote/privkey.pem", str(certificate.key_file))


def main_config(prefix: Path, site: Path) -> str:
    """What Debian's /etc/nginx/nginx.conf gives a site, in a folder of the test's own."""
    user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\npid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'};\nevents {{}}\n"
        f"http {{\n    access_log {prefix / 'access.log'};\n{temp}\n    include {site};\n}}\n"
    )


@contextlib.contextmanager
def nginx_in_front(upstream_port: int, directory: Path) -> Iterator[tuple[str, Certificate]]:
    """nginx with the shipped site in front of ``upstream_port``; its HTTPS base URL."""
    assert NGINX is not None
    directory.mkdir(parents=True, exist_ok=True)
    certificate = loopback_certificate(directory)
    https_port = free_port()
    site = directory / "provenote.conf"
    site.write_text(site_for(upstream_port, free_port(), https_port, certificate))
    config = directory / "nginx.conf"
    config.write_text(main_config(directory, site))
    command = [NGINX, "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(config)]
    process = subprocess.Popen([*command, "-g", "daemon off;"])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(
                    f"https://127.0.0.1:{https_port}/health", verify=str(certificate.cert_file)
                )
                break
            time.sleep(0.1)
        yield f"https://127.0.0.1:{https_port}", certificate
    finally:
        process.terminate()
        process.wait(timeout=20)


@needs_nginx
def test_the_nginx_site_passes_nginx_t(tmp_path: Path) -> None:
    certificate = loopback_certificate(tmp_path)
    site = tmp_path / "provenote.conf"
    site.write_text(site_for(8000, free_port(), free_port(), certificate))
    config = tmp_path / "nginx.conf"
    config.write_text(main_config(tmp_path, site))
    assert NGINX is not None
    checked = subprocess.run(
        [NGINX, "-t", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


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

    with (
        running_app(sandbox, tmp_path / "app", hold_at_ingesting, client_id="app-nginx") as app,
        nginx_in_front(int(app.base_url.rsplit(":", 1)[1]), tmp_path / "nginx") as (front, cert),
        httpx.Client(follow_redirects=True, timeout=60, verify=trusting(cert)) as browser,
    ):
        health = browser.get(f"{front}/health")
        assert health.status_code == 200 and health.json() == {"status": "alive"}
        # nginx's $request_id, accepted by the app as a clean id and echoed back.
        assert re.fullmatch(r"[0-9a-f]{32}", health.headers["x-request-id"])
        assert browser.get(f"{front}/metrics").status_code == 404
        job_id = launch_job(browser, sandbox, "0d4fcba9-b3c9-1765-4a0f-120004c84bb3")
        assert reached.wait(timeout=120)
        url = f"{front}/jobs/{job_id}/events"
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
