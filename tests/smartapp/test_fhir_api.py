"""Provenote's FHIR API, used by SMART's own Python client (fhirclient) as a real consumer.

The consumer is a backend system registered with the sandbox's authorization server: it gets a
SMART Backend Services token (client_credentials, private_key_jwt) whose audience is Provenote's
API, and Provenote checks it against the sandbox's JWKS.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fhirclient import client as fhir_client
from fhirclient.models.bundle import Bundle
from fhirclient.models.composition import Composition
from fhirclient.models.device import Device
from fhirclient.models.provenance import Provenance
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from launch.sandbox.clients import RegisteredClient
from launch.sandbox.run import Sandbox
from smartapp.access.oauth import client_assertion
from tests.smart_support import RunningApp, inpatient_encounter, running_app

PATIENTS = (
    "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
    "97da660e-b895-3740-a6fc-f8cb48dcf20c",
    "c1f85d12-7225-ae0a-d9a2-67fbd365c447",
)
READER = "reporting-system"
READ_SCOPES = "system/Composition.rs system/Provenance.rs system/Device.rs"


@pytest.fixture(scope="module")
def api_sandbox() -> Iterator[Sandbox]:
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        yield box


@pytest.fixture(scope="module")
def api(api_sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The app with its API trusting the sandbox's issuer, and a backend reader registered."""
    with running_app(
        api_sandbox,
        tmp_path_factory.mktemp("api"),
        client_auth="private_key_jwt",
        api_issuer=api_sandbox.issuer,
        api_jwks_url=f"{api_sandbox.issuer}/jwks",
        api_token_url=api_sandbox.auth.token_url,
        api_ehr_base=api_sandbox.fhir_base,
    ) as app:
        yield app


@pytest.fixture(scope="module")
def reader_key(api_sandbox: Sandbox, api: RunningApp) -> RSAKey:
    key = RSAKey.generate_key(2048, parameters={"alg": "RS384", "use": "sig"})
    key.ensure_kid()
    api_sandbox.register(
        RegisteredClient(
            READER,
            "private_key_jwt",
            jwks=KeySet([key]).as_dict(private=False),
            audience=api.settings.api_base,
        )
    )
    return key


def connected(api: RunningApp, api_sandbox: Sandbox, key: RSAKey, scope: str = READ_SCOPES):
    """fhirclient, authorized the SMART Backend Services way against the sandbox."""
    assertion = client_assertion(key, "RS384", READER, api_sandbox.auth.token_url)
    smart = fhir_client.FHIRClient(
        settings={
            "app_id": READER,
            "api_base": f"{api.settings.api_base}/",
            "jwt_token": assertion,
            "scope": scope,
        }
    )
    smart.prepare()
    smart.authorize()
    assert smart.server.auth.access_token
    return smart


def summarize(api: RunningApp, api_sandbox: Sandbox, token: str, patient: str) -> dict:
    """``$summarize`` in the asynchronous pattern: kick off, then poll until the result."""
    with httpx.Client() as browser:
        encounter = inpatient_encounter(browser, api_sandbox, patient)
    headers = {"authorization": f"Bearer {token}", "prefer": "respond-async"}
    kicked = httpx.post(
        f"{api.settings.api_base}/Patient/{patient}/$summarize",
        params={"encounter": f"Encounter/{encounter}"},
        headers=headers,
    )
    assert kicked.status_code == 202, kicked.text
    status_url = kicked.headers["content-location"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        polled = httpx.get(status_url, headers=headers)
        if polled.status_code != 202:
            assert polled.status_code == 200, polled.text
            return polled.json()
        assert polled.headers["x-progress"]
        time.sleep(0.2)
    raise AssertionError("$summarize did not finish")


@pytest.fixture(scope="module")
def drafted(api: RunningApp, api_sandbox: Sandbox, reader_key: RSAKey) -> list[str]:
    """One draft per sample patient, made through ``$summarize``; their Composition ids."""
    writer_scope = f"{READ_SCOPES} system/Composition.c"
    token = connected(api, api_sandbox, reader_key, writer_scope).server.auth.access_token
    ids = []
    for patient in PATIENTS:
        result = summarize(api, api_sandbox, token, patient)
        bundle = Bundle(result)
        assert bundle.type == "batch-response"
        (entry,) = bundle.entry
        assert entry.response.status == "201 Created"
        assert entry.resource.subject.reference == f"Patient/{patient}"
        ids.append(entry.resource.id)
    return ids


def test_metadata_lists_exactly_what_is_implemented(
    api: RunningApp, api_sandbox: Sandbox, reader_key: RSAKey
) -> None:
    smart = connected(api, api_sandbox, reader_key)
    statement = smart.server.capabilityStatement
    resources = {r.type: r for r in statement.rest[0].resource}
    assert set(resources) == {"Composition", "Provenance", "Device", "Patient"}
    composition = resources["Composition"]
    assert {i.code for i in composition.interaction} == {"read", "vread", "search-type"}
    assert {p.name for p in composition.searchParam} == {
        "patient",
        "encounter",
        "status",
        "date",
        "type",
        "_count",
        "_offset",
    }
    provenance = {p.name: p.type for p in resources["Provenance"].searchParam}
    assert provenance == {"target": "reference", "_count": "number", "_offset": "number"}
    assert [o.name for o in composition.operation] == ["document"]
    assert [o.name for o in resources["Patient"].operation] == ["summarize"]
    assert {i.code for i in resources["Device"].interaction} == {"read"}


def test_compositions_are_searched_read_and_assembled_as_documents(
    api: RunningApp, api_sandbox: Sandbox, reader_key: RSAKey, drafted: list[str]
) -> None:
    smart = connected(api, api_sandbox, reader_key)
    server = smart.server
    found = list(Composition.where(struct={"patient": PATIENTS[0]}).perform_resources_iter(server))
    assert [c.id for c in found] == [drafted[0]]
    composition = Composition.read(drafted[0], server)
    assert composition.status == "preliminary"
    assert composition.type.coding[0].code == "18842-5"
    assert composition.meta.versionId == "1"
    first = Composition.read_from(f"Composition/{drafted[0]}/_history/1", server)
    assert first.as_json() == composition.as_json()
    document = Bundle.read_from(f"Composition/{drafted[0]}/$document", server)
    assert document.type == "document"
    kinds = [entry.resource.resource_type for entry in document.entry]
    assert kinds[0] == "Composition" and "Patient" in kinds and "Device" in kinds
    provenances = list(
        Provenance.where(struct={"target": f"Composition/{drafted[0]}"}).perform_resources_iter(
            server
        )
    )
    assert provenances and all(
        p.target[0].reference == f"Composition/{drafted[0]}" for p in provenances
    )
    device_id = composition.author[0].reference.split("/")[-1]
    assert Device.read(device_id, server).deviceName[0].name


def test_search_filters_and_pages(
    api: RunningApp, api_sandbox: Sandbox, reader_key: RSAKey, drafted: list[str]
) -> None:
    server = connected(api, api_sandbox, reader_key).server
    pages = list(Composition.where(struct={"_count": "1"}).perform_iter(server))
    assert [len(page.entry) for page in pages] == [1, 1, 1]
    assert {page.entry[0].resource.id for page in pages} == set(drafted)
    assert all(page.total == 3 for page in pages)
    relations = [{link.relation for link in page.link} for page in pages]
    assert relations == [{"self", "next"}, {"self", "next", "previous"}, {"self", "previous"}]

    def ids(struct: dict[str, str]) -> set[str]:
        found = Composition.where(struct=struct).perform_resources_iter(server)
        return {c.id for c in found}

    assert ids({"status": "preliminary"}) == set(drafted)
    assert ids({"status": "final"}) == set()
    assert ids({"type": "http://loinc.org|18842-5"}) == set(drafted)
    assert ids({"type": "http://loinc.org|11506-3"}) == set()
    today = time.strftime("%Y", time.gmtime())
    assert ids({"date": f"ge{today}"}) == set(drafted)
    assert ids({"date": "lt2000"}) == set()
    encounter = Composition.read(drafted[1], server).encounter.reference
    assert ids({"encounter": encounter}) == {drafted[1]}


def _outcome(response: httpx.Response) -> str:
    body = response.json()
    assert body["resourceType"] == "OperationOutcome"
    return body["issue"][0]["code"]


def test_each_bad_token_is_401_and_each_missing_scope_403(
    api: RunningApp, api_sandbox: Sandbox, reader_key: RSAKey, drafted: list[str]
) -> None:
    url = f"{api.settings.api_base}/Composition/{drafted[0]}"
    auth = api_sandbox.auth
    api_base = api.settings.api_base
    stranger = RSAKey.generate_key(2048, parameters={"alg": "RS256", "kid": auth.key.kid})
    forged = jwt.encode(
        {"alg": "RS256", "kid": auth.key.kid},
        {"iss": auth.issuer, "aud": api_base, "scope": READ_SCOPES, "exp": time.time() + 60},
        stranger,
    )
    unauthenticated = {
        "no token": {},
        "not a bearer token": {"authorization": "Basic cmVhZGVyOnNlY3JldA=="},
        "garbage": {"authorization": "Bearer not.a.jwt"},
        "expired": {
            "authorization": "Bearer "
            + auth.access_token(READER, READ_SCOPES, None, ttl_s=-120, audience=api_base)
        },
        "for another audience": {
            "authorization": "Bearer " + auth.access_token(READER, READ_SCOPES, None)
        },
        "signed by another key": {"authorization": f"Bearer {forged}"},
    }
    for case, headers in unauthenticated.items():
        answer = httpx.get(url, headers=headers)
        assert answer.status_code == 401, case
        assert _outcome(answer) == "login", case
        assert answer.headers["www-authenticate"].startswith("Bearer"), case

    def token(scope: str) -> dict[str, str]:
        return {
            "authorization": "Bearer " + auth.access_token(READER, scope, None, audience=api_base)
        }

    forbidden = [
        (url, "system/Provenance.rs"),
        (url, "patient/Composition.rs"),
        (f"{api_base}/Provenance?target=Composition/{drafted[0]}", "system/Composition.rs"),
        (f"{api_base}/Composition?patient={PATIENTS[0]}", "system/Composition.r"),
    ]
    for target, scope in forbidden:
        answer = httpx.get(target, headers=token(scope))
        assert answer.status_code == 403, (target, scope)
        assert _outcome(answer) == "forbidden"
    refused = httpx.post(
        f"{api_base}/Patient/{PATIENTS[0]}/$summarize", headers=token("system/Composition.rs")
    )
    assert refused.status_code == 403
    assert httpx.get(url, headers=token("system/Composition.r")).status_code == 200
    assert httpx.get(url, headers=token("system/*.read")).status_code == 200
    missing = httpx.get(f"{api_base}/Composition/nope", headers=token("system/Composition.r"))
    assert missing.status_code == 404 and _outcome(missing) == "not-found"


def test_metadata_needs_no_token_and_the_api_refuses_all_without_an_issuer(
    api_sandbox: Sandbox, tmp_path: Path
) -> None:
    with running_app(api_sandbox, tmp_path) as bare:
        statement = httpx.get(f"{bare.settings.api_base}/metadata")
        assert statement.status_code == 200
        assert statement.json()["resourceType"] == "CapabilityStatement"
        token = api_sandbox.auth.access_token(
            READER, READ_SCOPES, None, audience=bare.settings.api_base
        )
        answer = httpx.get(
            f"{bare.settings.api_base}/Composition", headers={"authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 401 and "no issuer" in answer.json()["issue"][0]["diagnostics"]
        statement_resources = {r["type"] for r in statement.json()["rest"][0]["resource"]}
        assert "Patient" not in statement_resources  # no EHR configured: no $summarize


def test_a_summary_that_cannot_be_made_ends_as_an_operation_outcome(
    api: RunningApp, api_sandbox: Sandbox
) -> None:
    token = api_sandbox.auth.access_token(
        READER, "system/Composition.rs system/Composition.c", None, audience=api.settings.api_base
    )
    headers = {"authorization": f"Bearer {token}"}
    kicked = httpx.post(
        f"{api.settings.api_base}/Patient/no-such-patient/$summarize", headers=headers
    )
    assert kicked.status_code == 202
    deadline = time.monotonic() + 60
    polled = httpx.get(kicked.headers["content-location"], headers=headers)
    while polled.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.2)
        polled = httpx.get(kicked.headers["content-location"], headers=headers)
    assert polled.status_code == 500
    assert _outcome(polled) == "exception"
    diagnostics = polled.json()["issue"][0]["diagnostics"]
    assert diagnostics.startswith("GET Patient: HTTP 404 (error ")
    assert "Not found" not in diagnostics  # the EHR's answer is logged, never passed on
    unknown = httpx.get(f"{api.settings.api_base}/_async/nope", headers=headers)
    assert unknown.status_code == 404
