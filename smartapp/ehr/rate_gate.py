"""Requests to one EHR limited across every process of the installation, not per process.

A token bucket per EHR lives in PostgreSQL (``ehr_rate_limits``): each request takes a token in
one UPDATE (the row lock orders concurrent takers), tokens come back at
``PROVENOTE_EHR_REQUESTS_PER_SECOND`` up to ``PROVENOTE_EHR_REQUEST_BURST``, and a request that
finds none waits for the next. When the EHR answers 429 or 503 with Retry-After, the wait it asks
for is written to the same row, so every worker holds off, not only the one that was told.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from smartapp.core.db import Database

# A waiting request looks again at least this often (another process may have been told to wait
# longer, or the bucket refilled sooner than computed).
MAX_NAP_S = 1.0

_ENSURE = text(
    "INSERT INTO ehr_rate_limits (issuer, tokens, updated_at) VALUES (:issuer, :burst, now())"
    " ON CONFLICT (issuer) DO NOTHING"
)
_REFILLED = "LEAST(:burst, tokens + EXTRACT(EPOCH FROM (clock_timestamp() - updated_at)) * :rate)"
_TAKE = text(
    f"UPDATE ehr_rate_limits SET tokens = {_REFILLED} - 1, updated_at = clock_timestamp()"
    " WHERE issuer = :issuer"
    " AND (blocked_until IS NULL OR blocked_until <= clock_timestamp())"
    f" AND {_REFILLED} >= 1 RETURNING tokens"
)
_WAIT = text(
    "SELECT GREATEST(COALESCE(EXTRACT(EPOCH FROM (blocked_until - clock_timestamp())), 0),"
    f" (1 - {_REFILLED}) / :rate, 0) FROM ehr_rate_limits WHERE issuer = :issuer"
)
_HOLD_OFF = text(
    "UPDATE ehr_rate_limits SET blocked_until = GREATEST(COALESCE(blocked_until,"
    " clock_timestamp()), clock_timestamp() + make_interval(secs => :seconds))"
    " WHERE issuer = :issuer"
)


class RateGate(Protocol):
    async def wait_turn(self) -> None:
        """Return when a request to the EHR may be sent."""
        ...

    async def hold_off(self, seconds: float) -> None:
        """The EHR asked for no request during ``seconds``."""
        ...


class SharedRateGate:
    """The installation's budget for one EHR, in PostgreSQL."""

    def __init__(self, database: Database, issuer: str, per_second: float, burst: int) -> None:
        self.database = database
        self.issuer = issuer
        self.values = {"issuer": issuer, "rate": per_second, "burst": burst}
        self._ensured = False

    async def wait_turn(self) -> None:
        while (wait := await self.take()) > 0:
            await asyncio.sleep(min(wait, MAX_NAP_S))

    async def take(self) -> float:
        """Take a token: 0 when one was taken, else how long until one may be."""
        async with self.database.engine.begin() as connection:
            await self._ensure(connection)
            if (await connection.execute(_TAKE, self.values)).first() is not None:
                return 0.0
            wait = (await connection.execute(_WAIT, self.values)).scalar_one()
            return max(float(wait), 0.01)

    async def hold_off(self, seconds: float) -> None:
        async with self.database.engine.begin() as connection:
            await self._ensure(connection)
            await connection.execute(_HOLD_OFF, self.values | {"seconds": seconds})

    async def _ensure(self, connection: AsyncConnection) -> None:
        """The EHR's row, a full bucket, the first time this gate asks."""
        if not self._ensured:
            await connection.execute(_ENSURE, self.values)
            self._ensured = True
