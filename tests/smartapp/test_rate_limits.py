"""One EHR's request budget is the installation's, not each process's: shared in PostgreSQL,
and a Retry-After one process is told holds off every process."""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy import text

from smartapp.core.db import Database
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.rate_gate import SharedRateGate

EHR = "https://ehr.example.org/fhir"


def test_the_budget_of_one_ehr_is_shared_by_every_process(postgres_url: str) -> None:
    async def run() -> tuple[list[float], float, float, float, float]:
        # Two engines on one database: two processes, as far as the budget can tell.
        first, second = Database(postgres_url), Database(postgres_url)
        try:
            await first.migrate()
            here = SharedRateGate(first, EHR, per_second=0.5, burst=2)
            there = SharedRateGate(second, EHR, per_second=0.5, burst=2)
            burst = [await here.take(), await there.take()]
            after_here, after_there = await here.take(), await there.take()
            other = await SharedRateGate(second, "https://other.example.org", 0.5, 2).take()
            await here.hold_off(30)
            told = await there.take()
            return burst, after_here, after_there, other, told
        finally:
            await first.dispose()
            await second.dispose()

    burst, after_here, after_there, other, told = asyncio.run(run())
    assert burst == [0.0, 0.0]  # the burst, one request each
    # Then none for either process until a token comes back (one every 2 s).
    assert 0 < after_here <= 2.0 and 0 < after_there <= 2.0
    assert other == 0.0  # another EHR has a budget of its own
    assert told > 20  # one process told to wait 30 s: so is the other


def test_a_retry_after_one_client_hears_is_written_for_every_process(postgres_url: str) -> None:
    answers = iter([httpx.Response(429, headers={"retry-after": "1"}), httpx.Response(200)])

    async def run() -> object:
        database = Database(postgres_url)
        try:
            await database.migrate()
            transport = httpx.MockTransport(lambda request: next(answers))
            async with httpx.AsyncClient(transport=transport) as http:
                gate = SharedRateGate(database, EHR, per_second=100, burst=10)
                client = FhirClient(EHR, http, gate=gate, backoff_s=0.01)
                await client.request("GET", "Patient/p1")
            async with database.engine.connect() as connection:
                return (
                    await connection.execute(
                        text("SELECT blocked_until FROM ehr_rate_limits WHERE issuer = :issuer"),
                        {"issuer": EHR},
                    )
                ).scalar_one()
        finally:
            await database.dispose()

    assert asyncio.run(run()) is not None
