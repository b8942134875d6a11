"""Running the app under uvicorn with a shutdown that ends: on SIGTERM (or Ctrl-C) the app's
progress streams are told to reconnect elsewhere at once, and open requests get the grace
period (``PROVENOTE_SHUTDOWN_GRACE_S``) rather than as long as a job takes."""

from __future__ import annotations

import types
from typing import Any

import uvicorn
from litestar import Litestar

from smartapp.state import AppState

# How long an idle keep-alive connection stays open; nginx's upstream keepalive_timeout
# (deploy/nginx/provenote.conf) must be shorter, or it may reuse one the app has just closed.
APP_KEEP_ALIVE_S = 5


class StoppingServer(uvicorn.Server):
    """uvicorn's server, which first tells the app it is stopping."""

    def __init__(self, config: uvicorn.Config, state: AppState) -> None:
        super().__init__(config)
        self.provenote = state

    def handle_exit(self, sig: int, frame: types.FrameType | None) -> None:
        loop = self.provenote.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.provenote.stopping.set)
        super().handle_exit(sig, frame)


def serve(app: Litestar, host: str, port: int, grace_s: float, **ssl: Any) -> None:
    """Serve ``app`` until SIGTERM or SIGINT; our access log replaces uvicorn's (it omits
    query strings) and uvicorn logs through ours."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_keep_alive=APP_KEEP_ALIVE_S,
        timeout_graceful_shutdown=int(grace_s) or None,
        **ssl,
    )
    StoppingServer(config, app.state.provenote).run()
