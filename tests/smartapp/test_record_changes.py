"""Whether the record changed, asked of an EHR that takes no batch from an app: the same
count-only searches one by one, and no answer where one of them gives no total. Against a
recording stand-in for the EHR (the sandbox takes the batch: tests/smartapp/test_relaunch.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import httpx

from fhir_mapping.resources import RECORD_TYPES
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.record_changes import record_changed_since
from tests.attack_support import Recorded, as_json, recording_server

SINCE = datetime(2024, 3, 1, tzinfo=UTC)


def _asked(changed: dict[str, int | None]) -> tuple[bool | None, list[Recorded]]:
    with recording_server() as ehr:

        def refused(_: Recorded) -> tuple[int, dict[str, str], bytes]:
            return as_json({"resourceType": "OperationOutcome"}, 403)

        ehr.routes["/fhir/"] = refused
        for kind in ("Patient", *RECORD_TYPES):
            total = changed.get(kind, 0)
            body = {"resourceType": "Bundle", "type": "searchset"}
            ehr.routes[f"/fhir/{kind}"] = lambda _, b=body, t=total: as_json(
                b if t is None else b | {"total": t}
            )

        async def ask() -> bool | None:
            async def token(_: bool) -> str:
                return "lent"

            async with httpx.AsyncClient() as http:
                client = FhirClient(f"{ehr.url}/fhir", http, token, max_retries=0)
                return await record_changed_since(client, "p1", SINCE)

        return asyncio.run(ask()), list(ehr.requests)


def test_an_ehr_that_refuses_the_batch_is_asked_the_same_counts_one_by_one() -> None:
    unchanged, requests = _asked({})
    assert unchanged is False
    assert [r.method for r in requests].count("POST") == 1
    searches = [r for r in requests if r.method == "GET"]
    assert len(searches) == 1 + len(RECORD_TYPES)
    for search in searches:
        params = parse_qs(urlsplit(search.path).query)
        assert params["_summary"] == ["count"] and params["_lastUpdated"] == [
            "gt2024-03-01T00:00:00Z"
        ]
    changed, _ = _asked({"Condition": 1})
    assert changed is True


def test_a_count_without_a_total_leaves_the_question_open() -> None:
    unknown, _ = _asked({"Observation": None})
    assert unknown is None
