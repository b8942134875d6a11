"""Why the fifty-launch load test once read an answer that was not JSON (#40): nginx reused an
idle connection to the app at the moment the app closed it, and answered 502 with its own HTML
page, which the test's ``.json()`` could not read.

Two app processes (uvicorn, closing idle connections after ``APP_KEEP_ALIVE_S`` as ``provenote
serve`` does) behind the shipped nginx site answer a job's JSON. Each try uses both processes
once, waits about ``APP_KEEP_ALIVE_S`` (each try a little earlier or later, by under a
hundredth of a second: the app closes idle connections on a timer), then polls the job as a
waiting browser does. Run twice in one go: with the shipped upstream keep-alive (4 s, shorter
than the app's) and with nginx's default (60 s, the site before 939ce0e). Every answer that is
not the job's JSON is counted with its status.

Run: ``python -m bench.keepalive_race`` (needs nginx; about ten minutes).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
from litestar import Litestar, get

from launch.sandbox.balancer import nginx, nginx_binary
from launch.sandbox.servers import ThreadedServer, free_port
from launch.serving import APP_KEEP_ALIVE_S

TRIES = 60
NGINX_DEFAULT_IDLE_S = 60


@get("/jobs/{job_id:str}")
async def job(job_id: str) -> dict[str, str]:
    return {"id": job_id, "state": "running"}


def _poll(client: httpx.Client, base_url: str, job_id: str) -> str:
    """ "ok", or the status and the first bytes of an answer that is not the job's JSON."""
    try:
        answer = client.get(f"{base_url}/jobs/{job_id}")
    except httpx.HTTPError as error:
        return f"no answer ({type(error).__name__})"
    try:
        answer.json()
    except ValueError:
        return f"{answer.status_code} not JSON: {answer.text[:40]!r}"
    return "ok" if answer.status_code == 200 else f"{answer.status_code} JSON"


def _tries(idle_upstream_s: int | None, folder: Path) -> tuple[Counter[str], int]:
    """What the polls got, and how many times nginx's error log says the app closed first."""
    ports = [free_port(), free_port()]
    seen: Counter[str] = Counter()
    with ExitStack() as stack:
        for port in ports:
            server = ThreadedServer(Litestar([job]), port, keep_alive_s=APP_KEEP_ALIVE_S)
            server.start()
            stack.callback(server.stop)
        balancer = stack.enter_context(nginx(ports, folder, idle_upstream_s=idle_upstream_s))
        client = stack.enter_context(httpx.Client(timeout=30))
        for number in range(TRIES):
            for process in ports:
                _poll(client, balancer.base_url, f"warm-{process}")
            time.sleep(APP_KEEP_ALIVE_S + (number % 29 - 14) * 0.0007)
            seen[_poll(client, balancer.base_url, f"try-{number}")] += 1
    log = (folder / "error.log").read_text(encoding="utf-8")
    closed = log.count("prematurely closed") + log.count("reset by peer")
    return seen, closed


def main() -> None:
    if nginx_binary() is None:
        raise SystemExit("nginx is not installed (Debian: apt-get install nginx)")
    runs = {
        "shipped (4 s)": None,
        f"nginx default ({NGINX_DEFAULT_IDLE_S} s)": NGINX_DEFAULT_IDLE_S,
    }
    print(f"{TRIES} polls, each about {APP_KEEP_ALIVE_S} s after the app last answered")
    with tempfile.TemporaryDirectory() as scratch:
        for name, idle in runs.items():
            seen, closed = _tries(idle, Path(scratch) / str(idle))
            failed = sum(count for answer, count in seen.items() if answer != "ok")
            print(f"  nginx keeps idle app connections: {name}")
            print(f"    answers not the job's JSON: {failed} of {sum(seen.values())}")
            print(f"    nginx error log, app closed a connection in use: {closed}")
            for answer, count in sorted(seen.items()):
                if answer != "ok":
                    print(f"      {count} × {answer}")


if __name__ == "__main__":
    main()
