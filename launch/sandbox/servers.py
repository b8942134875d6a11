"""Serving on loopback for the sandbox and the tests: a free port, and an ASGI app run by uvicorn
from a background thread."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from launch.sandbox.tls import Certificate


class SandboxError(RuntimeError):
    """The sandbox could not start (Node.js or npm missing, a server that never came up)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ThreadedServer:
    """An ASGI app served by uvicorn on 127.0.0.1 from a background thread (over HTTPS with
    ``tls``); idle connections are closed after ``keep_alive_s`` (uvicorn's default: 5 s)."""

    def __init__(
        self, app: Any, port: int, tls: Certificate | None = None, keep_alive_s: int = 5
    ) -> None:
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_keep_alive=keep_alive_s,
            ssl_certfile=str(tls.cert_file) if tls else None,
            ssl_keyfile=str(tls.key_file) if tls else None,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout_s: float = 30) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise SandboxError("a sandbox web server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
