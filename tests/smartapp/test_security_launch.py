"""Attacks on the launch and the record pull, driven over real HTTP (issue: safe to connect).

Each test plays the attacker with a recording server and asserts what it did not receive: the
EHR's access token, a client secret, or any request at all.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import pytest

from launch.sandbox.run import Sandbox
from smartapp.core.registrations import ClientRegistration
from smartapp.ehr.egress import EhrBearerAuth, GuardedTransport, is_public_address, under_base
from smartapp.ehr.fhir_client import FhirClient, OutsideEhrError
from tests import fhir_fixtures as fx
from tests.attack_support import FakeEhr, RecordingServer, as_json, recording_server, seed_stay
from tests.smart_support import (
    RunningApp,
    app_and_browser,
    app_and_stepping_browser,
    beside_another_ehr,
    chart_launch,
    launch_job,
    running_app,
    wait_for,
)

LOINC = "http://loinc.org"


def evil_note(attacker: str) -> dict:
    return {
        "resourceType": "DocumentReference",
        "id": "{patient}-evil-note",
        "status": "current",
        "type": {"coding": [{"system": LOINC, "code": "11506-3"}]},
        "subject": {"reference": "Patient/{patient}"},
        "context": {"encounter": [{"reference": "Encounter/{encounter}"}]},
        "content": [
            {"attachment": {"contentType": "text/plain", "url": f"{attacker}/fhir/Binary/x"}}
        ],
    }


def evil_order(attacker: str) -> dict:
    return fx.order_by_reference(
        "{patient}-evil-order",
        f"{attacker}/fhir/Medication/m",
        patient_id="{patient}",
        encounter_id="{encounter}",
        authored="2024-03-02",
    )


# --- 1. The EHR's access token goes only to the EHR -------------------------------------------


def test_references_outside_the_ehr_are_never_fetched_and_the_rest_is_drafted(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with recording_server() as attacker:
        encounter = seed_stay(
            sandbox, "sec-outside", evil_note(attacker.url), evil_order(attacker.url)
        )
        with app_and_browser(sandbox, tmp_path, client_id="app-outside") as (app, browser):
            job = wait_for(
                browser, app, launch_job(browser, sandbox, "sec-outside", encounter=encounter)
            )
            assert job["state"] == "done", job
            draft = app.call(app.state.drafts.load(job["draft"]))
        assert attacker.requests == []  # not the token, not anything
    evidence = draft.evidence
    (note,) = [d for d in evidence["documents"] if "sec-outside-evil-note" in str(d["sources"])]
    assert note["errors"] == ["attachment outside the EHR, not fetched"]
    not_fetched = [e for e in evidence["trace"] if e["action"] == "excluded:not_fetched"]
    assert {event["resource"] for event in not_fetched} == {
        f"{attacker.url}/fhir/Binary/x",
        f"{attacker.url}/fhir/Medication/m",
    }
    assert any(
        e["action"] == "document_error" and "outside the EHR" in e["detail"]
        for e in evidence["trace"]
    )


def test_paging_links_off_the_base_are_not_followed_and_say_so() -> None:
    with recording_server() as ehr, recording_server() as attacker:
        pages = {
            "/fhir/Observation": {
                "resourceType": "Bundle",
                "type": "searchset",
                "entry": [{"resource": {"resourceType": "Observation", "id": "o1"}}],
                "link": [{"relation": "next", "url": f"{attacker.url}/fhir/Observation?page=2"}],
            },
            "/fhir/Condition": {
                "resourceType": "Bundle",
                "type": "searchset",
                "entry": [{"resource": {"resourceType": "Condition", "id": "c1"}}],
                # Same host, outside the base path: not the EHR's FHIR API either.
                "link": [{"relation": "next", "url": f"{ehr.url}/admin/Condition?page=2"}],
            },
        }
        for path, page in pages.items():
            ehr.routes[path] = lambda _, page=page: as_json(page)

        async def token(refresh: bool) -> str:
            return "the-ehr-token"

        async def search() -> list:
            async with httpx.AsyncClient() as http:
                client = FhirClient(f"{ehr.url}/fhir", http, token)
                return [await client.search(kind, {}) for kind in ("Observation", "Condition")]

        observations, conditions = asyncio.run(search())
    assert [r["id"] for r in observations.resources] == ["o1"]
    assert observations.not_fetched == [
        ("Observation", "search results incomplete: paging link outside the EHR")
    ]
    assert conditions.not_fetched and [r["id"] for r in conditions.resources] == ["c1"]
    assert attacker.requests == []
    assert all("/admin/" not in seen.path for seen in ehr.requests)
    assert all(seen.headers.get("authorization") == "Bearer the-ehr-token" for seen in ehr.requests)


def test_the_bearer_token_is_attached_only_under_the_fhir_base() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    async def token(refresh: bool) -> str:
        return "secret-token"

    async def requests() -> None:
        auth = EhrBearerAuth("https://ehr.example.org/fhir/R4", token)
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
            for url in (
                "https://ehr.example.org/fhir/R4/Patient/1",
                "https://ehr.example.org/fhir/R4-evil/Patient/1",
                "https://ehr.example.org/other",
                "http://ehr.example.org/fhir/R4/Patient/1",
                "https://ehr.example.org:8443/fhir/R4/Patient/1",
                "https://evil.example.org/fhir/R4/Patient/1",
            ):
                await http.get(url, auth=auth)

    asyncio.run(requests())
    carrying = [str(r.url) for r in sent if "authorization" in r.headers]
    assert carrying == ["https://ehr.example.org/fhir/R4/Patient/1"]
    assert not under_base(
        "https://ehr.example.org/fhir/R4/../admin", "https://ehr.example.org/fhir/R4"
    )
    with pytest.raises(OutsideEhrError):
        FhirClient("https://ehr.example.org/fhir/R4", httpx.AsyncClient()).url(
            "https://evil.example.org/fhir/R4/Binary/1"
        )


def test_encoded_dot_segments_never_carry_the_token_out_of_the_fhir_base() -> None:
    """A server that decodes ``%2e%2e`` resolves it as ``..``: such a path is outside the base,
    and so is an encoded slash or backslash, whatever the case of the escape."""
    base = "https://ehr.example.org/fhir/R4"
    client = FhirClient(base, httpx.AsyncClient())
    for path in (
        "Binary/%2e%2e/%2e%2e/x",
        "Binary/%2E%2E/admin",
        "Binary/..%2f..%2fadmin",
        "Binary/%2e/x",
        "Binary/a%5c..%5cadmin",
        f"{base}/Binary/%252e%252e/x".replace("%25", "%"),
    ):
        assert not under_base(f"{base}/{path}" if "://" not in path else path, base), path
        with pytest.raises(OutsideEhrError):
            client.url(path)
    assert under_base(f"{base}/Binary/abc-1.2", base)
    assert under_base(f"{base}/Observation?code=http%3A%2F%2Floinc.org%7C1234-5", base)


def test_non_public_addresses_are_refused_unless_configured() -> None:
    for address in ("127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254"):
        assert not is_public_address(address), address
    for address in ("::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "0.0.0.0"):
        assert not is_public_address(address), address
    assert is_public_address("93.184.216.34") and is_public_address("2606:4700::1111")

    with recording_server() as internal, recording_server() as ehr:

        async def fetch(url: str) -> int:
            transport = GuardedTransport([ehr.url], httpx.AsyncHTTPTransport())
            async with httpx.AsyncClient(transport=transport) as http:
                try:
                    return (await http.get(url)).status_code
                except httpx.TransportError:
                    return -1

        assert asyncio.run(fetch(f"{internal.url}/latest/meta-data")) == -1
        assert asyncio.run(fetch(f"{ehr.url}/fhir/metadata")) == 404  # configured: reached
    assert internal.requests == [] and len(ehr.requests) == 1


def test_a_style_url_pointing_inside_the_network_is_not_fetched(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with (
        recording_server() as internal,
        running_app(sandbox, tmp_path, client_id="app-style-ssrf") as app,
    ):
        assert app.call(app.state.styles.get(f"{internal.url}/style.json")) == {}
        assert internal.requests == []


# --- 2. Only configured EHRs can launch the app; no mix-up --------------------------------------


def test_an_unconfigured_issuer_is_refused_before_anything_is_fetched(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with (
        recording_server() as attacker,
        running_app(sandbox, tmp_path, client_id="app-deny", registrations=[]) as app,
    ):
        for iss in (f"{attacker.url}/fhir", sandbox.fhir_base, "http://169.254.169.254/"):
            answer = httpx.get(f"{app.base_url}/launch", params={"iss": iss})
            assert answer.status_code == 403 and "location" not in answer.headers
            assert "not configured to be launched" in answer.text
            assert iss not in answer.text  # nothing the request said is echoed
        assert attacker.requests == []


def test_a_client_secret_goes_only_to_its_own_ehr(sandbox: Sandbox, tmp_path: Path) -> None:
    """Two EHRs: the sandbox (confidential, a secret) and another one (public). A launch from
    the other one never carries the sandbox's secret."""
    with beside_another_ehr(
        sandbox,
        tmp_path,
        "app-two-public",
        client_id="app-two",
        client_auth="client_secret_basic",
        client_secret="only-for-the-sandbox",
    ) as (other_server, other, app, browser):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": other.base})
        assert launch.status_code == 302
        authorize = urlparse(launch.headers["location"])
        assert authorize.netloc == urlparse(other.base).netloc
        query = parse_qs(authorize.query)
        assert query["client_id"] == ["app-two-public"]
        state = query["state"][0]
        callback = browser.get(query["redirect_uri"][0], params={"code": "c", "state": state})
        assert callback.status_code == 502
    token_calls = [r for r in other_server.requests if r.path == "/token"]
    assert len(token_calls) == 1
    assert "authorization" not in token_calls[0].headers
    assert not other_server.saw("only-for-the-sandbox")
    assert b"client_id=app-two-public" in token_calls[0].body


def fake(other: FakeEhr, **named: str) -> tuple[ClientRegistration, ...]:
    """The fake EHR's registration, as ``running_app(extra_registrations=…)`` takes it."""
    return (ClientRegistration(issuer=other.base, client_id="app-fake", **named),)


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"token_endpoint": "https://elsewhere.example.org/token"}, "not on its own origin"),
        ({"authorization_endpoint": "https://elsewhere.example.org/auth"}, "not on its own origin"),
        ({"jwks_uri": "https://elsewhere.example.org/jwks"}, "not on its own origin"),
        ({"authorization_endpoint": "{url}/authorize?x=1"}, "query or fragment"),
        ({"authorization_endpoint": "{url}/authorize#frag"}, "query or fragment"),
        ({"issuer": "https://elsewhere.example.org"}, "OpenID issuer"),
    ],
)
def test_discovered_endpoints_off_the_issuers_origin_are_refused(
    sandbox: Sandbox, tmp_path: Path, change: dict, refusal: str
) -> None:
    with recording_server() as server:
        other = FakeEhr(server)
        other.smart_config |= {k: v.replace("{url}", server.url) for k, v in change.items()}
        with running_app(
            sandbox, tmp_path, client_id="app-mixup", extra_registrations=fake(other)
        ) as app:
            answer = httpx.get(f"{app.base_url}/launch", params={"iss": other.base})
        assert answer.status_code == 502 and refusal in answer.text
        assert "location" not in answer.headers
        assert [r.path for r in server.requests] == ["/fhir/.well-known/smart-configuration"]


def test_endpoints_the_registration_names_are_used_instead_of_discoverys(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with recording_server() as server, recording_server() as auth_server:
        other = FakeEhr(server)
        other.smart_config["authorization_endpoint"] = "https://mixed-up.example.org/authorize"
        named = fake(other, authorization_endpoint=f"{auth_server.url}/authorize")
        with running_app(
            sandbox, tmp_path, client_id="app-named", extra_registrations=named
        ) as app:
            answer = httpx.get(f"{app.base_url}/launch", params={"iss": other.base})
        assert answer.status_code == 302
        assert answer.headers["location"].startswith(f"{auth_server.url}/authorize?")


def app_beside(
    other: FakeEhr, sandbox: Sandbox, data_dir: Path, client_id: str
) -> AbstractContextManager[tuple[RunningApp, httpx.Client]]:
    """The app registered with the sandbox as ``client_id`` and with the fake EHR, and a browser
    that steps through the redirects itself."""
    return app_and_stepping_browser(
        sandbox, data_dir, client_id=client_id, extra_registrations=fake(other)
    )


def fake_callback(
    app: RunningApp, other: FakeEhr, browser: httpx.Client, **query: str
) -> httpx.Response:
    """Launch against the fake EHR, then come back to /callback as its authorize step would;
    ``nonce`` in the id_token is filled from the launch unless the test sets it."""
    launch = browser.get(f"{app.base_url}/launch", params={"iss": other.base})
    assert launch.status_code == 302, launch.text
    asked = parse_qs(urlparse(launch.headers["location"]).query)
    other.tokens(other.id_token("app-fake", **({"nonce": asked["nonce"][0]} | other.claims)))
    params = {"code": "c", "state": asked["state"][0]} | query
    return browser.get(f"{asked['redirect_uri'][0]}?{urlencode(params)}")


@pytest.mark.parametrize(
    ("claims", "kid", "accepted"),
    [
        ({}, True, True),
        ({}, False, True),  # no kid: every RS key of the JWKS is tried
        ({"nonce": "not-the-launch-nonce"}, True, False),
        ({"iss": "https://another-issuer.example.org"}, True, False),
        ({"aud": ["app-fake", "someone-else"]}, True, False),
        ({"aud": ["app-fake", "someone-else"], "azp": "someone-else"}, True, False),
        ({"aud": ["app-fake", "someone-else"], "azp": "app-fake"}, True, True),
        ({"aud": "someone-else"}, True, False),
    ],
)
def test_the_id_token_is_checked_for_issuer_audience_nonce_and_signature(
    sandbox: Sandbox, tmp_path: Path, claims: dict, kid: bool, accepted: bool
) -> None:
    with recording_server() as server:
        other = FakeEhr(server)
        other.claims, other.send_kid = claims, kid
        with app_beside(other, sandbox, tmp_path, "app-idtoken") as (app, browser):
            answer = fake_callback(app, other, browser)
            context = browser.get(f"{app.base_url}/api/context")
    if accepted:
        assert answer.status_code == 302, answer.text
        assert context.json()["fhir_user"] == f"{other.base}/Practitioner/doctor"
    else:
        assert answer.status_code == 502 and "id_token is not valid" in answer.text
        assert context.status_code == 401


def test_the_callbacks_iss_must_be_the_servers_when_it_promises_one(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with recording_server() as server:
        other = FakeEhr(server)
        other.smart_config["authorization_response_iss_parameter_supported"] = True
        with app_beside(other, sandbox, tmp_path, "app-iss") as (app, browser):
            missing = fake_callback(app, other, browser)
            wrong = fake_callback(app, other, browser, iss="https://attacker.example.org")
            right = fake_callback(app, other, browser, iss=other.issuer)
    assert missing.status_code == wrong.status_code == 403
    assert "came from another server" in wrong.text
    assert right.status_code == 302
    # the mixed-up responses never reached the token endpoint
    assert len([r for r in server.requests if r.path == "/token"]) == 1


def test_the_sandbox_sends_and_the_app_checks_the_authorization_response_iss(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-sandbox-iss") as (app, browser):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        authorize = browser.get(launch.headers["location"])
        callback = urlparse(authorize.headers["location"])
        query = {key: value[0] for key, value in parse_qs(callback.query).items()}
        assert query["iss"] == sandbox.issuer
        forged = callback._replace(query=urlencode(query | {"iss": "https://evil.example.org"}))
        assert browser.get(forged.geturl()).status_code == 403
        assert browser.get(f"{app.base_url}/api/context").status_code == 401


# --- 3. Sessions and roles --------------------------------------------------------------------


def test_a_cookie_the_browser_brings_is_never_adopted(sandbox: Sandbox, tmp_path: Path) -> None:
    encounter = seed_stay(sandbox, "sec-fixation")
    with app_and_browser(sandbox, tmp_path, client_id="app-fixation") as (app, victim):
        planted = "attacker-chosen-session-id-0123456789abcdefghij"
        victim.cookies.set("provenote_session", planted, domain="127.0.0.1")
        chart_launch(victim, sandbox, "sec-fixation", encounter)
        session = [c for c in victim.cookies.jar if c.name == "provenote_session"]
        assert [c.value for c in session if c.value != planted]  # a server-chosen one
        with httpx.Client(timeout=30) as attacker:
            attacker.cookies.set("provenote_session", planted, domain="127.0.0.1")
            assert attacker.get(f"{app.base_url}/api/context").status_code == 401


def test_pending_launches_live_in_the_database_and_are_used_up(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from sqlalchemy import func, select

    from smartapp.core.tables import PendingLaunchRow

    async def pending_count(app) -> int:
        async with app.state.database.sessions() as session:
            return await session.scalar(select(func.count()).select_from(PendingLaunchRow))

    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-pending") as (app, browser):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        assert app.call(pending_count(app)) == 1
        callback = browser.get(launch.headers["location"]).headers["location"]
        assert browser.get(callback).status_code == 302
        assert app.call(pending_count(app)) == 0


def keep_busy(browser: httpx.Client, url: str, seconds: float) -> list[int]:
    """Ask for the launch context every 0.3 s for ``seconds``; the statuses seen."""
    seen, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.3)
        seen.append(browser.get(f"{url}/api/context").status_code)
    return seen


def test_a_session_lives_while_used_and_ends_when_idle(sandbox: Sandbox, tmp_path: Path) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-idle", session_idle_s=2) as (
        app,
        browser,
    ):
        browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        assert set(keep_busy(browser, app.base_url, 3.0)) == {200}  # longer than the limit
        time.sleep(2.5)
        assert browser.get(f"{app.base_url}/api/context").status_code == 401


def test_a_session_ends_at_its_absolute_limit_however_busy(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-absolute", session_max_s=2) as (
        app,
        browser,
    ):
        browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        seen = keep_busy(browser, app.base_url, 3.0)
        assert seen[0] == 200 and seen[-1] == 401


def test_signing_out_ends_the_session_and_needs_the_csrf_token(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-logout") as (app, browser):
        landing = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        token = landing.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        assert browser.post(f"{app.base_url}/logout", data={}).status_code == 403
        assert browser.get(f"{app.base_url}/api/context").status_code == 200
        out = browser.post(f"{app.base_url}/logout", data={"csrf_token": token})
        assert out.status_code == 200 and "signed out" in out.text
        assert browser.get(f"{app.base_url}/api/context").status_code == 401


def test_over_https_cookies_are_host_prefixed_and_secure(sandbox: Sandbox, tmp_path: Path) -> None:
    with running_app(sandbox, tmp_path, client_id="app-https") as app:
        served_at = app.base_url
        # As deployed behind a TLS-terminating proxy: the app knows its public URL is https.
        app.settings.base_url = "https://provenote.example.org"
        launch = httpx.get(f"{served_at}/launch", params={"iss": sandbox.fhir_base})
    cookie = launch.headers["set-cookie"].lower()
    assert cookie.startswith("__host-provenote_launch=") and "secure" in cookie
    assert "path=/" in cookie and "domain=" not in cookie
    assert "max-age=31536000" in launch.headers["strict-transport-security"]


def test_a_patient_launch_drafts_but_never_writes_to_the_chart(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    patient = "c1f85d12-7225-ae0a-d9a2-67fbd365c447"
    with app_and_browser(sandbox, tmp_path, client_id="app-patient-user") as (app, browser):
        job = wait_for(browser, app, launch_job(browser, sandbox, patient, f"Patient/{patient}"))
        assert job["state"] == "done"
        assert "may not write to the chart" in job["detail"]
        draft = browser.get(f"{app.base_url}/api/drafts/{job['draft']}").json()
        assert draft["write_back"]["status"] == "user_may_not_write"
        assert draft["write_back"]["remote"] is None
        landing = browser.get(f"{app.base_url}/").text
        assert 'data-status="user_may_not_write"' in landing


def test_a_job_is_visible_only_to_a_session_of_its_patient_and_issuer(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from sqlalchemy import update

    from smartapp.core.tables import JobRow

    encounter = seed_stay(sandbox, "sec-visible")
    with app_and_browser(sandbox, tmp_path, client_id="app-visible") as (app, browser):
        job_id = launch_job(browser, sandbox, "sec-visible", encounter=encounter)
        wait_for(browser, app, job_id)

        async def move_to_another_ehr() -> None:
            async with app.state.database.sessions() as session, session.begin():
                await session.execute(
                    update(JobRow).where(JobRow.id == job_id).values(iss="https://other/fhir")
                )

        app.call(move_to_another_ehr())
        for path in ("", "/events"):
            assert browser.get(f"{app.base_url}/jobs/{job_id}{path}").status_code == 404
        assert browser.post(f"{app.base_url}/jobs/{job_id}/retry").status_code == 404


def test_a_forged_system_session_cookie_sees_no_backend_job(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with running_app(sandbox, tmp_path, client_id="app-forged") as app:
        job = app.call(
            app.state.jobs.submit(
                sandbox.fhir_base, "p-x", None, origin="backend", api_client="reporting"
            )
        )
        assert job.session_id == "" and job.origin == "backend"
        with httpx.Client(timeout=30) as browser:
            browser.cookies.set("provenote_session", "system:reporting", domain="127.0.0.1")
            assert browser.get(f"{app.base_url}/jobs/{job.id}").status_code == 404


def test_the_stub_recorder_answers_as_routed() -> None:
    """The attacker fixture itself: records every request and answers from its routes."""
    with recording_server() as server:
        server.routes["/x"] = lambda seen: as_json({"seen": seen.method})
        assert httpx.post(f"{server.url}/x", content=b"hello").json() == {"seen": "POST"}
        assert httpx.get(f"{server.url}/y").status_code == 404
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/x"), ("GET", "/y")]
    assert server.saw("hello") and not server.saw("absent")
    assert isinstance(server, RecordingServer)


def test_registrations_come_from_one_variable_or_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from pydantic import ValidationError

    from smartapp.core.settings import Settings

    listed = [{"issuer": "https://a.example.org/fhir/", "client_id": "from-variable"}]
    monkeypatch.setenv("PROVENOTE_REGISTRATIONS", json.dumps(listed))
    in_file = tmp_path / "registrations.json"
    in_file.write_text(
        json.dumps(
            [
                {
                    "issuer": "https://b.example.org/fhir",
                    "client_id": "from-file",
                    "client_auth": "client_secret_basic",
                    "client_secret": "s",
                }
            ]
        )
    )
    monkeypatch.setenv("PROVENOTE_REGISTRATIONS_FILE", str(in_file))
    settings = Settings()
    assert settings.registration_for("https://a.example.org/fhir").client_id == "from-variable"
    from_file = settings.registration_for("https://b.example.org/fhir/")
    assert from_file.client_auth == "client_secret_basic"
    assert from_file.client_secret.get_secret_value() == "s"
    assert settings.registration_for("https://c.example.org/fhir") is None
    assert "https://b.example.org:443" in settings.ehr_origins()
    monkeypatch.delenv("PROVENOTE_REGISTRATIONS_FILE")
    monkeypatch.setenv(
        "PROVENOTE_REGISTRATIONS",
        json.dumps(
            [{"issuer": "https://x", "client_id": "y", "client_auth": "client_secret_basic"}]
        ),
    )
    with pytest.raises(ValidationError, match="needs a client_secret"):
        Settings()
