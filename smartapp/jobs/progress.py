"""Job progress to whoever watches it: the browser's event stream, in this process or another.

In one process a published view goes straight to the listeners' queues. With several processes
(web replicas and workers on PostgreSQL) it travels as a PostgreSQL ``NOTIFY``: every process
listens on one channel and hands each notice to its own listeners, so the stream a browser opened
on one replica hears the worker that runs the job on another machine. A notice lost while a
listening connection reconnects is covered by the stream's own polling of the job row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from smartapp.core.db import libpq_dsn
from smartapp.core.errors import log

CHANNEL = "provenote_job_progress"
View = dict[str, Any]


class ProgressBus:
    """In-process delivery: what a single process needs, and the base of the PostgreSQL bus."""

    def __init__(self) -> None:
        self._listeners: dict[str, set[asyncio.Queue[View]]] = {}

    async def start(self) -> None:
        """Nothing to connect in one process."""

    async def stop(self) -> None:
        """Nothing to close in one process."""

    def listen(self, job_id: str) -> asyncio.Queue[View]:
        queue: asyncio.Queue[View] = asyncio.Queue()
        self._listeners.setdefault(job_id, set()).add(queue)
        return queue

    def unlisten(self, job_id: str, queue: asyncio.Queue[View]) -> None:
        listeners = self._listeners.get(job_id)
        if listeners is not None:
            listeners.discard(queue)
            if not listeners:
                del self._listeners[job_id]

    def deliver(self, job_id: str, view: View) -> None:
        for queue in list(self._listeners.get(job_id, ())):
            queue.put_nowait(view)

    async def publish(self, job_id: str, view: View) -> None:
        self.deliver(job_id, view)


class PostgresProgressBus(ProgressBus):
    """Across processes: ``NOTIFY`` on publish, one ``LISTEN`` connection per process."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__()
        self.engine = engine
        self._connection: asyncpg.Connection | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._connect()
        self._watch = asyncio.create_task(self._keep_listening())

    async def _connect(self) -> None:
        url = self.engine.url.render_as_string(hide_password=False)
        self._connection = await asyncpg.connect(libpq_dsn(url))
        await self._connection.add_listener(CHANNEL, self._on_notice)

    async def _keep_listening(self) -> None:
        """Reconnect the listening connection when the database drops it."""
        while True:
            await asyncio.sleep(2.0)
            if self._connection is not None and not self._connection.is_closed():
                continue
            try:
                await self._connect()
            except (OSError, asyncpg.PostgresError) as failure:
                log.warning("progress listener cannot reconnect yet: %r", failure)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._connection is not None and not self._connection.is_closed():
            await self._connection.close()

    def _on_notice(self, _connection: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            notice = json.loads(payload)
            self.deliver(str(notice["job"]), dict(notice["view"]))
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed progress notice")

    async def publish(self, job_id: str, view: View) -> None:
        payload = json.dumps({"job": job_id, "view": view})
        async with self.engine.begin() as connection:
            await connection.execute(
                text("SELECT pg_notify(:channel, :payload)"),
                {"channel": CHANNEL, "payload": payload},
            )
