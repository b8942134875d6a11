"""The async FHIR client against the sandbox FHIR server: paging, faults, tokens, conditions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from launch.sandbox.authorization import LaunchContext
from launch.sandbox.run import Sandbox
from pipeline.settings import PipelineSettings
from smartapp.access.discovery import discover
from smartapp.access.smart_errors import SmartError
from smartapp.core.registrations import ClientRegistration
from smartapp.core.retry_after import retry_after_seconds
from smartapp.core.settings import Settings
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.ehr.pull import PullBounds, pull_record
from smartapp.jobs.evidence import evidence_from_fhir

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
OTHER_PATIENT = "c1f85d12-7225-ae0a-d9a2-67fbd365c447"
SCOPES = "patient/*.rs patient/Composition.cu"


@pytest.fixture
def faults(sandbox: Sandbox) -> Iterator[Sandbox]:
    yield sandbox
    sandbox.set_fault("none", count=0)


def token_for(sandbox: Sandbox, patient: str = PATIENT, ttl_s: int | None = None) -> str:
    return sandbox.auth.access_token("tests", SCOPES, LaunchContext(f"Patient/{patient}"), ttl_s)


def run(coroutine):
    return asyncio.run(coroutine)


async def with_client(sandbox: Sandbox, action, token: str | None = None, **options):
    bearer = token or token_for(sandbox)

    async def get_token(refresh: bool) -> str | None:
        return bearer

    async with httpx.AsyncClient(timeout=30) as http:
        client = FhirClient(sandbox.fhir_base, http, get_token, backoff_s=0.01, **options)
        return await action(client)


def test_search_follows_next_links_to_every_match(sandbox: Sandbox) -> None:
    async def action(client: FhirClient) -> tuple[list, dict]:
        found = await client.search("Observation", {"patient": f"Patient/{PATIENT}"})
        everything = found.resources
        first_page = await client._json(
            "GET", "Observation", params={"patient": f"Patient/{PATIENT}", "_count": 7}
        )
        return everything, first_page

    everything, first_page = run(with_client(sandbox, action, page_size=7))
    assert len(everything) == first_page["total"] == 62
    assert len({o["id"] for o in everything}) == 62
    assert any(link["relation"] == "next" for link in first_page["link"])


@pytest.mark.parametrize(("mode", "count"), [("429", 2), ("503", 2), ("drop", 1), ("slow", 1)])
def test_transient_faults_are_retried_and_succeed(faults: Sandbox, mode: str, count: int) -> None:
    faults.set_fault(mode, count=count, retry_after=1, delay_ms=300)
    patient = run(with_client(faults, lambda client: client.read("Patient", PATIENT)))
    assert patient["id"] == PATIENT


def test_retry_after_is_honoured(faults: Sandbox) -> None:
    faults.set_fault("429", count=1, retry_after=1)
    started = asyncio.run(asyncio.sleep(0, result=datetime.now(UTC)))
    run(with_client(faults, lambda client: client.read("Patient", PATIENT)))
    assert datetime.now(UTC) - started >= timedelta(seconds=1)


def test_a_permanent_500_is_a_clear_error_and_no_partial_record(faults: Sandbox) -> None:
    faults.set_fault("500", count=1000)
    with pytest.raises(FhirError, match=r"GET \w+: HTTP 500 \(error \w+\)") as raised:
        run(with_client(faults, lambda client: pull_record(client, PATIENT), max_retries=2))
    assert raised.value.status == 500
    assert "injected fault" not in str(raised.value)  # the EHR's body goes to the log only


def test_an_expired_token_without_refresh_is_refused(sandbox: Sandbox) -> None:
    expired = token_for(sandbox, ttl_s=-10)
    with pytest.raises(FhirError, match="GET Patient: HTTP 401"):
        run(with_client(sandbox, lambda client: client.read("Patient", PATIENT), token=expired))


def test_a_401_refreshes_once_and_retries(sandbox: Sandbox) -> None:
    tokens = [token_for(sandbox, ttl_s=-10)]
    refreshes = []

    async def get_token(refresh: bool) -> str | None:
        if refresh:
            refreshes.append(True)
            tokens.append(token_for(sandbox))
        return tokens[-1]

    async def action() -> dict:
        async with httpx.AsyncClient(timeout=30) as http:
            return await FhirClient(sandbox.fhir_base, http, get_token).read("Patient", PATIENT)

    assert run(action())["id"] == PATIENT
    assert refreshes == [True]


def test_a_token_for_one_patient_cannot_read_another(sandbox: Sandbox) -> None:
    with pytest.raises(FhirError, match="GET Patient: HTTP 403") as raised:
        run(with_client(sandbox, lambda client: client.read("Patient", OTHER_PATIENT)))
    assert raised.value.status == 403
    others = run(
        with_client(
            sandbox,
            lambda client: client.search("Condition", {"patient": f"Patient/{OTHER_PATIENT}"}),
        )
    )
    assert others.resources == []


def _evidence_of(bundle: dict, encounter: str | None = None) -> dict:
    state = evidence_from_fhir(bundle, encounter, settings=PipelineSettings())
    facts = {
        fact.id: fact.attributes.model_dump(mode="json")
        for facts in state.facts.values()
        for fact in facts
    }
    # Where the record starts, and the latest note before the stay, come from sorted
    # first-page searches in the bounded pull.
    return {
        "encounter": state.encounter,
        "facts": facts,
        "documents": state.documents,
        "record_begins": state.record_begins,
        "complaints_before": (state.complaints_before, state.complaints_noted_on),
    }


@pytest.mark.parametrize(
    "patient", [PATIENT, OTHER_PATIENT, "97da660e-b895-3740-a6fc-f8cb48dcf20c"]
)
def test_the_stay_bounded_pull_yields_the_evidence_of_the_whole_record(
    sandbox: Sandbox, patient: str
) -> None:
    async def both(client: FhirClient) -> tuple[dict, dict]:
        bounded = await pull_record(client, patient)
        whole = await pull_record(client, patient, bounds=PullBounds(whole_record=True))
        return bounded, whole

    bounded, whole = run(with_client(sandbox, both, token=token_for(sandbox, patient)))
    assert len(bounded["entry"]) < len(whole["entry"])
    assert _evidence_of(bounded) == _evidence_of(whole)


def test_a_launch_encounter_bounds_the_pull_to_that_stay(sandbox: Sandbox) -> None:
    async def encounters(client: FhirClient) -> list[dict]:
        return (await client.search("Encounter", {"patient": f"Patient/{PATIENT}"})).resources

    everything = run(with_client(sandbox, encounters))
    earliest = min(everything, key=lambda e: e["period"]["start"])
    bundle = run(with_client(sandbox, lambda client: pull_record(client, PATIENT, earliest["id"])))
    pulled = {
        e["resource"]["id"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Encounter"
    }
    assert earliest["id"] in pulled and len(pulled) < len(everything)
    whole = run(
        with_client(
            sandbox,
            lambda client: pull_record(
                client, PATIENT, earliest["id"], PullBounds(whole_record=True)
            ),
        )
    )
    assert _evidence_of(bundle, f"Encounter/{earliest['id']}") == _evidence_of(
        whole, f"Encounter/{earliest['id']}"
    )


def test_binary_over_the_size_limit_is_refused(sandbox: Sandbox) -> None:
    big = {
        "resourceType": "Binary",
        "id": "big-note",
        "contentType": "text/plain",
        "data": "QUFB" * 50_000,
    }
    httpx.put(
        f"{sandbox.fhir_base}/Binary/big-note",
        json=big,
        headers={"x-admin-token": sandbox.admin_token},
    ).raise_for_status()
    with pytest.raises(FhirError, match="exceeds the limit"):
        run(
            with_client(
                sandbox, lambda client: client.binary("Binary/big-note"), max_binary_bytes=10_000
            )
        )
    loaded = run(with_client(sandbox, lambda client: client.binary("Binary/big-note")))
    assert loaded["id"] == "big-note"


def test_conditional_create_and_if_match_update(sandbox: Sandbox) -> None:
    composition = {
        "resourceType": "Composition",
        "status": "preliminary",
        "type": {"text": "Discharge summary"},
        "date": "2024-01-01",
        "author": [{"display": "test"}],
        "title": "draft",
        "identifier": {"system": "urn:provenote:test", "value": "idempotency-1"},
        "subject": {"reference": f"Patient/{PATIENT}"},
    }
    condition = "identifier=urn:provenote:test|idempotency-1"

    async def action(client: FhirClient) -> tuple[dict, dict, dict]:
        first = await client.create(composition, if_none_exist=condition)
        second = await client.create(composition, if_none_exist=condition)
        updated = await client.update(
            first | {"title": "draft v2"}, if_match=f'W/"{first["meta"]["versionId"]}"'
        )
        return first, second, updated

    first, second, updated = run(with_client(sandbox, action))
    assert first["id"] == second["id"]
    assert updated["title"] == "draft v2"
    with pytest.raises(FhirError, match="412") as raised:
        run(with_client(sandbox, lambda client: client.update(first, if_match='W/"stale"')))
    assert raised.value.status == 412


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(httpx.Response(429, headers={"retry-after": "5"})) == 5
    assert 25 < retry_after_seconds(httpx.Response(429, headers={"retry-after": later})) <= 30
    assert retry_after_seconds(httpx.Response(429)) is None


def test_discovery_reads_well_known_then_falls_back_to_the_capability_statement(
    sandbox: Sandbox,
) -> None:
    async def live() -> object:
        async with httpx.AsyncClient() as http:
            return await discover(http, sandbox.registration(Settings()))

    config = run(live())
    assert config.authorization_endpoint == f"{sandbox.issuer}/authorize"
    assert "permission-v2" in config.capabilities

    statement = httpx.get(f"{sandbox.fhir_base}/metadata").json()

    def older_server(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/.well-known/smart-configuration"):
            return httpx.Response(404)
        return httpx.Response(200, json=statement)

    old_ehr = ClientRegistration(issuer="https://old-ehr.example.org/fhir", client_id="x")

    async def fallback(registration: ClientRegistration) -> object:
        async with httpx.AsyncClient(transport=httpx.MockTransport(older_server)) as http:
            return await discover(http, registration)

    # Its endpoints lie on another origin: refused unless its registration names them.
    with pytest.raises(SmartError, match="not on its own origin"):
        run(fallback(old_ehr))
    named = old_ehr.model_copy(
        update={
            "authorization_endpoint": f"{sandbox.issuer}/authorize",
            "token_endpoint": f"{sandbox.issuer}/token",
        }
    )
    old = run(fallback(named))
    assert (old.authorization_endpoint, old.token_endpoint) == (
        f"{sandbox.issuer}/authorize",
        f"{sandbox.issuer}/token",
    )

    async def nothing() -> object:
        transport = httpx.MockTransport(lambda request: httpx.Response(404, json={}))
        async with httpx.AsyncClient(transport=transport) as http:
            registration = ClientRegistration(
                issuer="https://no-smart.example.org/fhir", client_id="x"
            )
            return await discover(http, registration)

    with pytest.raises(SmartError, match="advertises no SMART authorization endpoints"):
        run(nothing())


@pytest.mark.shared_data
def test_seeding_the_california_folder_resolves_every_conditional_reference() -> None:
    from tests.conftest import SYNTHEA

    with Sandbox(app_launch_url="http://127.0.0.1:1/launch", seed_paths=[SYNTHEA]) as box:
        assert len(box.report.patients) == 15
        assert box.report.dropped_references == 0
        headers = {"x-admin-token": box.admin_token}
        encounter = httpx.get(
            f"{box.fhir_base}/Encounter", params={"_count": 1}, headers=headers
        ).json()["entry"][0]["resource"]
        for reference in (
            encounter["subject"]["reference"],
            encounter["participant"][0]["individual"]["reference"],
            encounter["serviceProvider"]["reference"],
        ):
            assert httpx.get(f"{box.fhir_base}/{reference}", headers=headers).status_code == 200


def test_an_ehr_that_refuses_a_search_bound_is_searched_by_patient_alone() -> None:
    stay = {
        "resourceType": "Encounter",
        "id": "stay",
        "period": {"start": "2024-03-01T08:00:00Z", "end": "2024-03-04T12:00:00Z"},
    }
    note = {"resourceType": "DocumentReference", "id": "note", "status": "current"}
    asked: list[str] = []

    def strict_server(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        kind = request.url.path.rsplit("/", 2)[-1]
        params = set(request.url.params) - {"_count"}
        if request.url.path.endswith("/Patient/p1"):
            return httpx.Response(200, json={"resourceType": "Patient", "id": "p1"})
        if request.url.path.endswith("/Encounter/stay"):
            return httpx.Response(200, json=stay)
        if kind != "Encounter" and params != {"patient"}:
            return httpx.Response(400, json={"resourceType": "OperationOutcome"})
        found = {"Encounter": [stay], "DocumentReference": [note]}.get(kind, [])
        entries = [{"resource": resource} for resource in found]
        return httpx.Response(200, json={"resourceType": "Bundle", "entry": entries})

    async def pull() -> dict:
        async with httpx.AsyncClient(transport=httpx.MockTransport(strict_server)) as http:
            return await pull_record(FhirClient("http://ehr/fhir", http), "p1", "stay")

    bundle = run(pull())
    assert {"DocumentReference/note", "Encounter/stay", "Patient/p1"} <= {
        f"{e['resource']['resourceType']}/{e['resource'].get('id')}" for e in bundle["entry"]
    }
    fallbacks = [
        url
        for url in asked
        if "/DocumentReference" in url and set(httpx.URL(url).params) == {"_count", "patient"}
    ]
    assert fallbacks  # the bounded searches were refused, then asked by patient alone
