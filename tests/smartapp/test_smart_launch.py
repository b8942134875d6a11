"""SMART App Launch end to end: the sandbox EHR's chart, its authorization server, and the app.

Real HTTP on loopback: the sandbox FHIR server (Medplum in Node), the sandbox authorization
server and the Provenote app each listen on their own port; the test is the browser.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from launch.sandbox.run import Sandbox
from smartapp.access.oauth import ASSERTION_TYPE, client_assertion
from smartapp.core.keys import signing_key
from smartapp.core.registrations import ClientRegistration, RefreshAccess
from smartapp.core.settings import Settings
from tests.conftest import ROOT
from tests.smart_support import (
    app_and_browser,
    app_and_stepping_browser,
    chart_launch,
    inpatient_encounter,
    running_app,
)

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
SAMPLE = ROOT / "launch" / "samples" / f"{PATIENT}.json"


def sample_counts() -> dict[str, int]:
    bundle = json.loads(SAMPLE.read_bytes())
    counts: dict[str, int] = {}
    for entry in bundle["entry"]:
        kind = entry["resource"]["resourceType"]
        counts[kind] = counts.get(kind, 0) + 1
    return counts


@pytest.mark.parametrize(
    "client",
    [
        {"client_id": "app-public", "client_auth": "public"},
        {
            "client_id": "app-secret",
            "client_auth": "client_secret_basic",
            "client_secret": "s3cret",
        },
        {"client_id": "app-rs384", "client_auth": "private_key_jwt", "signing_alg": "RS384"},
        {"client_id": "app-es384", "client_auth": "private_key_jwt", "signing_alg": "ES384"},
    ],
    ids=lambda client: client["client_id"],
)
def test_ehr_launch_gives_context_and_pulls_the_stays_record(
    sandbox: Sandbox, tmp_path: Path, client: dict
) -> None:
    with app_and_browser(sandbox, tmp_path, **client) as (app, browser):
        encounter = inpatient_encounter(browser, sandbox, PATIENT)
        landing = chart_launch(browser, sandbox, PATIENT, encounter)
        assert landing.status_code == 200 and str(landing.url) == f"{app.base_url}/"
        assert f'<code id="patient">{PATIENT}</code>' in landing.text
        context = browser.get(f"{app.base_url}/api/context").json()
        assert context["patient"] == PATIENT and context["encounter"] == encounter
        assert context["fhir_user"] == f"{sandbox.fhir_base}/{sandbox.practitioner}"
        assert "patient/Observation.rs" in context["scope"]
        record = browser.get(f"{app.base_url}/api/record").json()
        everything = sample_counts()
        # The stay's record: never more than the patient has, and less than all of it
        # (tests/smartapp/test_fhir_client.py: it yields the same evidence as the whole record).
        for kind in ("Encounter", "DocumentReference", "Condition"):
            assert 0 < record["counts"][kind] <= everything[kind], kind
        assert sum(record["counts"].values()) < sum(everything.values())
        assert record["counts"]["Patient"] == 1 and record["encounter"] == encounter


def test_standalone_launch_asks_launch_patient_and_gets_a_patient(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-standalone") as (app, browser):
        first = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        authorize = next(r for r in first.history if "/auth/authorize" in str(r.url))
        scopes = parse_qs(urlparse(str(authorize.url)).query)["scope"][0].split()
        assert "launch/patient" in scopes and "launch" not in scopes
        context = browser.get(f"{app.base_url}/api/context").json()
        assert f"Patient/{context['patient']}" == sandbox.auth.default_patient


def test_session_cookie_is_opaque_httponly_and_tokens_are_encrypted_at_rest(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-cookie") as (app, browser):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        set_cookie = launch.headers["set-cookie"].lower()
        assert set_cookie.startswith("provenote_launch=")  # binds the callback to this browser
        assert "httponly" in set_cookie and "samesite=lax" in set_cookie
        assert "secure" not in set_cookie  # loopback; Secure is set for any other host
        binding = browser.cookies.get("provenote_launch")
        hop = launch
        while hop.status_code in (302, 303):
            location = hop.headers["location"]
            hop = browser.get(location if location.startswith("http") else app.base_url + location)
        session = browser.cookies.get("provenote_session")
        assert session and len(session) >= 40 and session != binding
        stored = app.call(app.state.store.tokens(session))
        assert stored is not None and stored.tokens.access_token
        sealed = app.call(app.state.store.sealed(session))
        assert sealed and stored.tokens.access_token.encode() not in sealed
        assert b"access_token" not in sealed
    assert Settings(base_url="https://provenote.example.org").secure_cookies


def callback_url(browser: httpx.Client, sandbox: Sandbox) -> str:
    """Launch from the chart, step through the redirects up to the app's callback: its URL,
    not yet followed."""
    encounter = inpatient_encounter(browser, sandbox, PATIENT)
    hop = chart_launch(browser, sandbox, PATIENT, encounter)
    while "/callback" not in hop.headers.get("location", ""):
        hop = browser.get(hop.headers["location"])
    return str(hop.headers["location"])


def test_a_state_mismatch_is_refused_and_stores_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-state") as (app, browser):
        callback = callback_url(browser, sandbox)
        forged = callback.replace("state=", "state=x")
        refused = browser.get(forged)
        assert refused.status_code == 400 and "state is unknown" in refused.text
        assert browser.get(f"{app.base_url}/api/context").status_code == 401
        assert browser.get(callback).status_code == 302  # the genuine state still completes
        assert browser.get(f"{app.base_url}/api/context").status_code == 200


def test_state_replay_after_success_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-replay") as (_, browser):
        callback = callback_url(browser, sandbox)
        assert browser.get(callback).status_code == 302
        again = browser.get(callback)
        assert again.status_code == 400 and "already used" in again.text


def test_state_from_another_browser_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    with (
        running_app(sandbox, tmp_path, client_id="app-csrf") as app,
        httpx.Client(timeout=60) as victim,
        httpx.Client(timeout=60) as attacker,
    ):
        launch = attacker.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        authorize = attacker.get(launch.headers["location"])
        callback = authorize.headers["location"]
        assert victim.get(callback).status_code == 400
        assert victim.get(f"{app.base_url}/api/context").status_code == 401


@pytest.mark.parametrize(
    ("params", "status", "message", "advice"),
    [
        ({}, 400, "no iss parameter", "Launch Provenote again from the patient"),
        # A configuration problem: relaunching cannot fix it, and the page does not say it can.
        (
            {"iss": "http://127.0.0.1:1/fhir"},
            403,
            "not configured to be launched",
            "launching again will not help",
        ),
    ],
)
def test_bad_launches_render_an_error_page(
    sandbox: Sandbox, tmp_path: Path, params: dict, status: int, message: str, advice: str
) -> None:
    with running_app(sandbox, tmp_path, client_id="app-errors") as app:
        answer = httpx.get(f"{app.base_url}/launch", params=params, timeout=30)
        assert answer.status_code == status and message in answer.text
        assert advice in answer.text
        if params:
            assert "again from the" not in answer.text


def test_a_registered_ehr_that_does_not_answer_renders_an_error_page(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    unreachable = ClientRegistration(issuer="http://127.0.0.1:1/fhir", client_id="app-down")
    with running_app(sandbox, tmp_path, client_id="app-down", registrations=[unreachable]) as app:
        answer = httpx.get(f"{app.base_url}/launch", params={"iss": unreachable.issuer})
        assert answer.status_code == 502
        assert "cannot read the SMART configuration of the EHR (error " in answer.text


def test_unknown_issuer_is_refused_when_an_allow_list_is_set(
    sandbox: Sandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        running_app(
            sandbox,
            tmp_path,
            client_id="app-allow",
            allowed_issuers=["https://ehr.example.org/fhir"],
        ) as app,
        caplog.at_level(logging.WARNING, "provenote"),
    ):
        answer = httpx.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        assert answer.status_code == 403 and "not configured to be launched" in answer.text
        # Nothing is fetched from it, but the operator sees which issuer tried.
        assert "launch again" not in answer.text.lower()
    refused = [
        record.getMessage() for record in caplog.records if "launch refused" in record.getMessage()
    ]
    assert refused and sandbox.fhir_base in refused[0]


def test_denied_consent_renders_an_error_and_stores_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-denied") as (app, browser):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        asked = parse_qs(urlparse(launch.headers["location"]).query)
        denied = browser.get(
            asked["redirect_uri"][0], params={"error": "access_denied", "state": asked["state"][0]}
        )
        assert denied.status_code == 403 and "access_denied" in denied.text
        assert browser.get(f"{app.base_url}/api/context").status_code == 401


# --- the authorization server's own refusals ----------------------------------------------------


def authorize_code(
    sandbox: Sandbox, client_id: str, redirect_uri: str, verifier_challenge: str
) -> str:
    launch_id = sandbox.auth.new_launch(f"Patient/{PATIENT}", None)
    answer = httpx.get(
        f"{sandbox.issuer}/authorize",
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": "launch patient/*.rs",
            "state": "s",
            "aud": sandbox.fhir_base,
            "launch": launch_id,
            "code_challenge": verifier_challenge,
            "code_challenge_method": "S256",
        },
    )
    return parse_qs(urlparse(answer.headers["location"]).query)["code"][0]


def test_pkce_verifier_mismatch_is_refused(sandbox: Sandbox) -> None:
    from launch.sandbox.authorization import pkce_challenge
    from tests.smart_support import registered

    sandbox.register(registered("pkce-client", "public", "http://127.0.0.1:1/cb"))
    code = authorize_code(
        sandbox, "pkce-client", "http://127.0.0.1:1/cb", pkce_challenge("right" * 10)
    )
    answer = httpx.post(
        f"{sandbox.issuer}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1:1/cb",
            "client_id": "pkce-client",
            "code_verifier": "wrong" * 10,
        },
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "invalid_grant",
        "error_description": "PKCE code_verifier does not match",
    }


def test_a_reused_client_assertion_jti_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    from launch.sandbox.authorization import pkce_challenge
    from tests.smart_support import registered

    settings = Settings(client_id="jti-client", client_auth="private_key_jwt", data_dir=tmp_path)
    key = signing_key(settings)
    sandbox.register(
        registered(
            "jti-client",
            "private_key_jwt",
            "http://127.0.0.1:1/cb",
            jwks=KeySet([key]).as_dict(private=False),
        )
    )
    assertion = client_assertion(key, "RS384", "jti-client", sandbox.auth.token_url)

    def exchange() -> httpx.Response:
        code = authorize_code(
            sandbox, "jti-client", "http://127.0.0.1:1/cb", pkce_challenge("v" * 50)
        )
        return httpx.post(
            f"{sandbox.issuer}/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": "http://127.0.0.1:1/cb",
                "code_verifier": "v" * 50,
                "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": assertion,
            },
        )

    assert exchange().status_code == 200
    reused = exchange()
    assert reused.status_code == 401
    assert "jti missing or already used" in reused.json()["error_description"]


def test_client_assertions_are_rs384_or_es384_with_fresh_jti_and_short_exp(tmp_path: Path) -> None:
    for alg in ("RS384", "ES384"):
        settings = Settings(client_auth="private_key_jwt", signing_alg=alg, data_dir=tmp_path / alg)
        key = signing_key(settings)
        first = client_assertion(key, alg, "c", "https://ehr/token")
        second = client_assertion(key, alg, "c", "https://ehr/token")
        decoded = [jwt.decode(token, key, algorithms=[alg]) for token in (first, second)]
        assert all(token.header["alg"] == alg for token in decoded)
        assert decoded[0].claims["jti"] != decoded[1].claims["jti"]
        for token in decoded:
            claims = token.claims
            assert claims["iss"] == claims["sub"] == "c" and claims["aud"] == "https://ehr/token"
            assert 0 < claims["exp"] - claims["iat"] <= 300


def test_the_app_serves_its_public_jwks(sandbox: Sandbox, tmp_path: Path) -> None:
    with running_app(sandbox, tmp_path, client_id="app-jwks", client_auth="private_key_jwt") as app:
        keys = httpx.get(f"{app.base_url}/.well-known/jwks.json").json()["keys"]
        assert len(keys) == 1 and keys[0]["kty"] == "RSA" and "d" not in keys[0]
        again = httpx.get(f"{app.base_url}/.well-known/jwks.json").json()["keys"]
        assert again == keys


@pytest.mark.parametrize(
    ("capabilities", "refresh", "ehr_launch", "wanted", "other_syntax"),
    [
        (
            ["permission-v2"],
            "auto",
            True,
            {"patient/Observation.rs", "patient/Composition.cu", "launch", "openid", "fhirUser",
             "online_access"},
            (".read", ".write"),
        ),
        (
            [],
            "offline_access",
            False,
            {"patient/Observation.read", "patient/Provenance.write", "launch/patient",
             "offline_access"},
            (".rs", ".cu"),
        ),
    ],
)  # fmt: skip
def test_scopes_use_v2_syntax_only_when_the_server_lists_permission_v2(
    capabilities: list[str],
    refresh: RefreshAccess,
    ehr_launch: bool,
    wanted: set[str],
    other_syntax: tuple[str, ...],
) -> None:
    from smartapp.access.discovery import SmartConfiguration
    from smartapp.access.oauth import requested_scopes

    registration = ClientRegistration(issuer="https://ehr", client_id="app", refresh=refresh)
    server = SmartConfiguration(
        authorization_endpoint="a", token_endpoint="t", capabilities=capabilities
    )
    scopes = requested_scopes(server, registration, ehr_launch=ehr_launch).split()
    assert wanted <= set(scopes)
    assert not any(scope.endswith(other_syntax) for scope in scopes)


def test_an_expiring_token_is_refreshed_before_the_record_pull(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_browser(sandbox, tmp_path, client_id="app-refresh") as (app, browser):
        encounter = inpatient_encounter(browser, sandbox, PATIENT)
        chart_launch(browser, sandbox, PATIENT, encounter)
        session = browser.cookies.get("provenote_session")
        stored = app.call(app.state.store.tokens(session))
        assert stored is not None and stored.tokens.refresh_token
        context = app.call(app.state.store.context(session))
        expired = stored.model_copy(update={"expires_at": 0.0})
        app.call(app.state.store.save(session, context, expired))
        record = browser.get(f"{app.base_url}/api/record")
        assert record.status_code == 200 and record.json()["counts"]["Patient"] == 1
        renewed = app.call(app.state.store.tokens(session))
        assert renewed.tokens.access_token != stored.tokens.access_token
        assert renewed.tokens.refresh_token != stored.tokens.refresh_token
        assert renewed.expires_at > 0


def test_a_refused_token_request_renders_an_error_page(sandbox: Sandbox, tmp_path: Path) -> None:
    with running_app(
        sandbox,
        tmp_path,
        client_id="app-bad-secret",
        client_auth="client_secret_basic",
        client_secret="right",
    ) as app:
        sandbox.auth.clients["app-bad-secret"].secret = "changed-at-the-ehr"
        with httpx.Client(follow_redirects=True, timeout=60) as browser:
            answer = browser.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
            assert answer.status_code == 502
            assert "the token request was refused (HTTP 401, invalid_client; error " in answer.text
            assert "client authentication failed" not in answer.text  # the EHR's words: log only
            assert browser.get(f"{app.base_url}/api/context").status_code == 401


def test_authorize_accepts_post(sandbox: Sandbox) -> None:
    from launch.sandbox.authorization import pkce_challenge
    from tests.smart_support import registered

    sandbox.register(registered("post-client", "public", "http://127.0.0.1:1/cb"))
    answer = httpx.post(
        f"{sandbox.issuer}/authorize",
        data={
            "response_type": "code",
            "client_id": "post-client",
            "redirect_uri": "http://127.0.0.1:1/cb",
            "scope": "launch/patient patient/*.rs",
            "state": "abc",
            "aud": sandbox.fhir_base,
            "code_challenge": pkce_challenge("x" * 50),
            "code_challenge_method": "S256",
        },
    )
    assert answer.status_code == 302
    query = parse_qs(urlparse(answer.headers["location"]).query)
    assert query["state"] == ["abc"] and query["code"]


def test_backend_services_get_system_tokens_by_client_credentials(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from tests.smart_support import registered

    settings = Settings(
        client_id="backend", client_auth="private_key_jwt", signing_alg="ES384", data_dir=tmp_path
    )
    key = signing_key(settings)
    sandbox.register(
        registered(
            "backend",
            "private_key_jwt",
            "http://127.0.0.1:1/cb",
            jwks=KeySet([key]).as_dict(private=False),
        )
    )
    answer = httpx.post(
        f"{sandbox.issuer}/token",
        data={
            "grant_type": "client_credentials",
            "scope": "system/Patient.rs system/Observation.rs",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": client_assertion(key, "ES384", "backend", sandbox.auth.token_url),
        },
    )
    assert answer.status_code == 200
    token = answer.json()
    assert token["scope"] == "system/Patient.rs system/Observation.rs" and "patient" not in token
    patients = httpx.get(
        f"{sandbox.fhir_base}/Patient", headers={"authorization": f"Bearer {token['access_token']}"}
    ).json()
    assert patients["total"] >= 3


def test_over_https_the_cookies_are_kept_inside_the_ehrs_frame(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A web EHR frames the app on its own site: over HTTPS the launch cookie is SameSite=None,
    Secure and Partitioned (CHIPS), keeping its __Host- prefix; over HTTP on loopback, Lax."""
    with running_app(sandbox, tmp_path, client_id="app-https") as plain:
        answer = httpx.get(f"{plain.base_url}/launch", params={"iss": sandbox.fhir_base})
        lax = answer.headers["set-cookie"].lower()
        assert "samesite=lax" in lax and "partitioned" not in lax
    with running_app(sandbox, tmp_path / "https", client_id="app-https2") as app:
        settings = app.settings.model_copy(update={"base_url": "https://provenote.example.org"})
        app.state.settings = settings
        answer = httpx.get(f"{app.base_url}/launch", params={"iss": sandbox.fhir_base})
        cookie = answer.headers["set-cookie"]
    assert cookie.startswith("__Host-provenote_launch=")
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "secure", "partitioned", "samesite=none", "path=/"} <= attributes
    assert not any(part.startswith("domain=") for part in attributes)


def test_a_browser_that_keeps_no_cookie_in_the_frame_is_offered_a_window_of_its_own(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with app_and_stepping_browser(sandbox, tmp_path, client_id="app-no-cookies") as (app, browser):
        encounter = inpatient_encounter(browser, sandbox, PATIENT)
        hop = chart_launch(browser, sandbox, PATIENT, encounter)
        while "/callback/" not in hop.headers.get("location", ""):
            hop = browser.get(hop.headers["location"])
            if urlparse(str(hop.url)).netloc == urlparse(app.base_url).netloc:
                browser.cookies.clear()  # a browser that blocks the app's cookie in a frame
        refused = browser.get(hop.headers["location"])
    assert refused.status_code == 400
    assert "blocked Provenote's cookie inside the EHR" in refused.text
    assert "another browser" not in refused.text
    link = refused.text.split('id="open-window" href="', 1)[1].split('"', 1)[0]
    assert (
        link.startswith("/launch?iss=")
        and "launch=" in link
        and 'target="_blank"' in (refused.text)
    )
