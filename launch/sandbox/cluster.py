"""Provenote as a health system runs it, on one machine: web replicas behind a load balancer,
worker processes, one PostgreSQL. Every part is a real process talking real HTTP and SQL; the
multi-process tests and the scale-out benchmark start it against a sandbox EHR."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
from cryptography.fernet import Fernet

from launch.sandbox.balancer import Balancer, nginx
from launch.sandbox.run import Sandbox
from launch.sandbox.servers import free_port
from smartapp.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_ADMIN = os.environ.get(
    "PROVENOTE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)


async def _postgres(statement: str, admin_dsn: str) -> None:
    connection = await asyncpg.connect(admin_dsn, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def temporary_postgres(admin_dsn: str = POSTGRES_ADMIN) -> Iterator[str]:
    """A new, empty PostgreSQL database (its SQLAlchemy URL), dropped afterwards."""
    name = f"provenote_{uuid.uuid4().hex[:12]}"
    asyncio.run(_postgres(f"CREATE DATABASE {name}", admin_dsn))
    base = admin_dsn.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_postgres(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", admin_dsn))


@dataclass
class Cluster:
    sandbox: Sandbox
    balancer: Balancer
    base_url: str
    web_urls: list[str]
    database_url: str
    env: dict[str, str]
    logs: Path
    webs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_worker(self) -> subprocess.Popen[bytes]:
        number = len(self.workers)
        worker = _process(["worker", "--name", f"worker-{number}"], self.env, self.logs, number)
        self.workers.append(worker)
        return worker

    def worker_named(self, name: str) -> subprocess.Popen[bytes]:
        """The worker started with ``--name name`` (worker-0, worker-1, …)."""
        return self.workers[int(name.removeprefix("worker-"))]

    def stop(self) -> None:
        for process in [*self.webs, *self.workers]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in [*self.webs, *self.workers]:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def _process(
    arguments: list[str], env: dict[str, str], logs: Path, number: int
) -> subprocess.Popen[bytes]:
    # The process holds its own copy of the log's descriptor; ours is closed at once.
    with (logs / f"{arguments[0]}-{number}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "launch.cli", *arguments],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _wait_ready(url: str, process: subprocess.Popen[bytes], logs: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(
                path.read_text(errors="replace")[-2000:] for path in logs.glob("*.log")
            )
            raise AssertionError(f"a web process exited ({process.returncode}):\n{tail}")
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not become ready")


@contextmanager
def cluster(
    sandbox: Sandbox, data_dir: Path, database_url: str, web: int = 2, workers: int = 2
) -> Iterator[Cluster]:
    """``web`` × ``provenote serve`` behind the shipped nginx site (round robin, no affinity)
    and ``workers`` × ``provenote worker``, all on one PostgreSQL database with the procrastinate
    queue."""
    web_ports = [free_port() for _ in range(web)]
    with nginx(web_ports, data_dir / "nginx") as balancer:
        base_url = balancer.base_url
        settings = sandbox.configure(
            Settings(base_url=base_url, data_dir=data_dir, client_id="provenote-scale")
        )
        registrations = [
            r.model_dump(mode="json", exclude_none=True) for r in settings.registrations
        ]
        env = os.environ | {
            "PROVENOTE_BASE_URL": base_url,
            "PROVENOTE_DATA_DIR": str(data_dir),
            "PROVENOTE_DATABASE_URL": database_url,
            "PROVENOTE_JOB_QUEUE": "procrastinate",
            "PROVENOTE_CLIENT_ID": "provenote-scale",
            "PROVENOTE_REGISTRATIONS": json.dumps(registrations),
            "PROVENOTE_WORKER_HEARTBEAT_S": "1",
            "PROVENOTE_WORKER_STALLED_AFTER_S": "4",
            "PROVENOTE_WORKER_CONCURRENCY": "2",
            # A stopped worker hands its jobs back after 2 s rather than a minute.
            "PROVENOTE_SHUTDOWN_GRACE_S": "2",
            # Shared by every process, as `provenote check-config` asks of such a layout.
            "PROVENOTE_TOKEN_ENCRYPTION_KEY": Fernet.generate_key().decode("ascii"),
            "PROVENOTE_APP_SECRET": secrets.token_hex(32),
        }
        logs = data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        web_urls = [f"http://127.0.0.1:{port}" for port in web_ports]
        running = Cluster(sandbox, balancer, base_url, web_urls, database_url, env, logs)
        try:
            for number, port in enumerate(web_ports):
                arguments = ["serve", "--host", "127.0.0.1", "--port", str(port)]
                running.webs.append(_process(arguments, env, logs, number))
            for _ in range(workers):
                running.start_worker()
            for url, process in zip(web_urls, running.webs, strict=True):
                _wait_ready(url, process, logs)
            sandbox.app_launch_url = f"{base_url}/launch"
            yield running
        finally:
            running.stop()
