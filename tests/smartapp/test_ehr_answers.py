"""What EHRs really answer, and how Provenote takes it (issue: inside a real EHR).

Writes answered ``201 Created`` with an empty body, a note whose Binary is gone, an error body
full of patient data, a code that comes back to another EHR's callback, and settings an operator
got wrong: each over real HTTP (a recording server plays the EHR) or through the real CLI.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from launch.sandbox.run import Sandbox
from smartapp.access.sessions import LaunchContext, StoredTokens
from smartapp.core.registrations import callback_id
from smartapp.core.settings import Settings, unknown_variables
from smartapp.ehr.fhir_client import FhirClient, FhirError
from tests.attack_support import Recorded, as_json, recording_server, seed_stay
from tests.conftest import ROOT
from tests.smart_support import (
    RunningApp,
    app_and_browser,
    beside_another_ehr,
    drafted_stay,
    launch_job,
    running_app,
    wait_for,
)

NOTE = {"resourceType": "Composition", "status": "preliminary", "title": "AI draft"}


def _empty(status: int, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, headers, b""


def test_a_201_without_a_body_is_read_from_location_and_etag() -> None:
    with recording_server() as ehr:
        base = f"{ehr.url}/fhir"
        ehr.routes["/fhir/Composition"] = lambda _: _empty(
            201, location=f"{base}/Composition/c-1/_history/3"
        )
        ehr.routes["/fhir/Composition/c-1"] = lambda _: _empty(200, etag='W/"4"')

        async def write() -> tuple[dict, dict]:
            async with httpx.AsyncClient() as http:
                client = FhirClient(base, http, max_retries=0)
                created = await client.create(NOTE, if_none_exist="identifier=s|k")
                updated = await client.update(created | {"title": "v2"}, if_match='W/"3"')
                return created, updated

        created, updated = asyncio.run(write())
    assert (created["id"], created["meta"]["versionId"]) == ("c-1", "3")
    assert (updated["id"], updated["meta"]["versionId"]) == ("c-1", "4")
    post, put = ehr.requests
    assert post.headers["prefer"] == "return=representation"
    assert post.headers["if-none-exist"] == "identifier=s|k"
    assert put.headers["if-match"] == 'W/"3"'


def test_a_201_that_names_nothing_is_found_again_by_its_identifier() -> None:
    """Never a note in the EHR that Provenote has not recorded: the conditional create's own
    identifier finds what the EHR took."""
    with recording_server() as ehr:
        base = f"{ehr.url}/fhir"

        def composition(seen: Recorded) -> tuple[int, dict[str, str], bytes]:
            if seen.method == "POST":
                return _empty(201)
            found = {"resourceType": "Bundle", "entry": [{"resource": NOTE | {"id": "c-9"}}]}
            return as_json(found)

        ehr.routes["/fhir/Composition"] = composition

        async def write() -> dict:
            async with httpx.AsyncClient() as http:
                client = FhirClient(base, http, max_retries=0)
                return await client.create(NOTE, if_none_exist="identifier=s|key-1")

        assert asyncio.run(write())["id"] == "c-9"
    search = ehr.requests[1]
    assert search.method == "GET" and "identifier=s%7Ckey-1" in search.path


def test_a_201_with_neither_body_location_nor_identifier_fails_the_write() -> None:
    with recording_server() as ehr:
        ehr.routes["/fhir/Composition"] = lambda _: _empty(201)

        async def write() -> dict:
            async with httpx.AsyncClient() as http:
                return await FhirClient(f"{ehr.url}/fhir", http, max_retries=0).create(NOTE)

        with pytest.raises(FhirError, match="neither its id nor where it is"):
            asyncio.run(write())


def test_an_ehr_error_body_is_logged_by_its_shape_never_its_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcome = {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": "not-found", "diagnostics": "Jane Doe 1961-02-03"}],
    }
    with recording_server() as ehr, caplog.at_level(logging.DEBUG):
        ehr.routes["/fhir/Patient/p-1"] = lambda _: (
            404,
            {"content-type": "application/fhir+json"},
            json.dumps(outcome).encode(),
        )

        async def read() -> None:
            async with httpx.AsyncClient() as http:
                await FhirClient(f"{ehr.url}/fhir", http, max_retries=0).read("Patient", "p-1")

        with pytest.raises(FhirError, match="HTTP 404"):
            asyncio.run(read())
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Jane" not in logged and "1961" not in logged
    assert "bytes of application/fhir+json, error code not-found" in logged


def test_a_note_whose_binary_is_gone_is_excluded_and_the_rest_is_drafted(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    gone = {
        "resourceType": "DocumentReference",
        "id": "{patient}-gone-note",
        "status": "current",
        "type": {"coding": [{"system": "http://loinc.org", "code": "11506-3"}]},
        "subject": {"reference": "Patient/{patient}"},
        "context": {"encounter": [{"reference": "Encounter/{encounter}"}]},
        "content": [{"attachment": {"contentType": "text/plain", "url": "Binary/not-there"}}],
    }
    encounter = seed_stay(sandbox, "ehr-gone-binary", gone)
    with app_and_browser(sandbox, tmp_path, client_id="app-gone") as (app, browser):
        job_id = launch_job(browser, sandbox, "ehr-gone-binary", encounter=encounter)
        job = wait_for(browser, app, job_id)
        assert job["state"] == "done", job
        draft = app.call(app.state.drafts.load(job["draft"]))
    (note,) = [d for d in draft.evidence["documents"] if "gone-note" in str(d["sources"])]
    assert note["errors"] == ["attachment not found in the EHR (its Binary answers 404)"]


def test_a_code_that_comes_back_to_another_ehrs_callback_is_never_redeemed(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Mix-up without RFC 9207: a launch started at a (malicious) registered EHR whose user is
    sent on to the honest sandbox comes back to the sandbox's callback, not the one the launch
    was for; the code and the PKCE verifier never reach the malicious EHR's token endpoint."""
    with beside_another_ehr(sandbox, tmp_path, "app-mixup-two", client_id="app-mixup") as (
        server,
        evil,
        app,
        browser,
    ):
        launch = browser.get(f"{app.base_url}/launch", params={"iss": evil.base})
        asked = parse_qs(urlparse(launch.headers["location"]).query)
        assert asked["redirect_uri"] == [app.settings.redirect_uri_for(evil.base)]
        honest = app.settings.redirect_uri_for(sandbox.fhir_base)
        assert honest != asked["redirect_uri"][0]
        answer = browser.get(honest, params={"code": "honest-code", "state": asked["state"][0]})
        assert answer.status_code == 403 and "another EHR" in answer.text
    assert [r.path for r in server.requests if r.path == "/token"] == []
    assert not server.saw("honest-code")
    assert callback_id(sandbox.fhir_base) == callback_id(f"{sandbox.fhir_base}/")


def test_unknown_variables_are_named_with_the_closest_setting() -> None:
    problems = unknown_variables(
        {
            "PROVENOTE_DATABASE_URI": "x",
            "PROVENOTE_APP_BASE_URL": "x",
            "PROVENOTE_ZZZ": "x",
            "PROVENOTE_BASE_URL": "ok",
            "PROVENOTE_TORCH_SPEC": "launch scripts' own",
            "HOME": "/root",
        }
    )
    assert problems == [
        "PROVENOTE_APP_BASE_URL is not a Provenote setting; did you mean PROVENOTE_BASE_URL?",
        "PROVENOTE_DATABASE_URI is not a Provenote setting; did you mean PROVENOTE_DATABASE_URL?",
        "PROVENOTE_ZZZ is not a Provenote setting",
    ]


def _provenote(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROVENOTE_")}
    return subprocess.run(
        [sys.executable, "-m", "launch.cli", *args],
        cwd=ROOT,
        env=clean | environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


# Web processes and workers on one database and queue.
SHARED_LAYOUT = {
    "PROVENOTE_JOB_QUEUE": "procrastinate",
    "PROVENOTE_DATABASE_URL": "postgresql+asyncpg://provenote@127.0.0.1:5432/provenote",
}
FERNET_KEY = "kVNoAcvUIB0sPBxBHhiwtRYEvZkNYhdN9aQWUUhR8Sc="
ONE_EHR = {"PROVENOTE_ALLOWED_ISSUERS": '["https://ehr.example.org/fhir"]'}


def test_check_config_passes_a_configuration_that_can_work(tmp_path: Path) -> None:
    alone = _provenote("check-config", PROVENOTE_DATA_DIR=str(tmp_path), **ONE_EHR)
    assert alone.returncode == 0, alone.stderr
    assert "configuration OK: 1 EHR registrations, in-process jobs" in alone.stdout


def test_check_config_passes_a_shared_layout_whose_database_answers(
    tmp_path: Path, postgres_url: str
) -> None:
    shared = {"PROVENOTE_TOKEN_ENCRYPTION_KEY": FERNET_KEY, "PROVENOTE_APP_SECRET": "0" * 64}
    layout = _provenote(
        "check-config",
        PROVENOTE_DATA_DIR=str(tmp_path),
        **SHARED_LAYOUT | {"PROVENOTE_DATABASE_URL": postgres_url},
        **shared,
        **ONE_EHR,
    )
    assert layout.returncode == 0, layout.stderr
    assert "procrastinate on PostgreSQL" in layout.stdout


def test_check_config_reports_every_problem_at_once_each_in_a_paragraph(tmp_path: Path) -> None:
    """An operator replaying the units by hand fixes the whole file in one pass: an unknown
    variable, a data folder that cannot be written, a broken Fernet key, no EHR registered and a
    database that does not answer are all reported, none as a traceback, and no password shown."""
    (tmp_path / "a-file").write_text("not a folder")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    answer = _provenote(
        "check-config",
        PROVENOTE_DATA_DIR=str(tmp_path / "a-file" / "data"),
        PROVENOTE_TOKEN_ENCRYPTION_KEY="not-a-fernet-key",
        PROVENOTE_DATABASE_URL=f"postgresql+asyncpg://provenote:hunter2@127.0.0.1:{port}/x",
        PROVENOTE_DATA_DIRR="typo",
    )
    assert answer.returncode == 2
    problems = answer.stderr.split("\n\n- ")[1:]
    assert "the configuration cannot work (5 problems)" in answer.stderr
    assert [problem.split(" ", 1)[0] for problem in problems] == [
        "PROVENOTE_DATA_DIRR",
        f"PROVENOTE_DATA_DIR={tmp_path / 'a-file' / 'data'}",
        "PROVENOTE_TOKEN_ENCRYPTION_KEY",
        "No",
        "PROVENOTE_DATABASE_URL",
    ]
    assert "not a Fernet key" in problems[2] and "cannot be reached" in problems[4]
    assert "hunter2" not in answer.stderr and "Traceback" not in answer.stderr


def test_a_token_key_file_that_holds_no_fernet_key_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "token.key"
    key_file.write_text("0123")
    answer = _provenote(
        "check-config",
        PROVENOTE_DATA_DIR=str(tmp_path),
        PROVENOTE_TOKEN_ENCRYPTION_KEY_FILE=str(key_file),
        **ONE_EHR,
    )
    assert answer.returncode == 2
    assert f"PROVENOTE_TOKEN_ENCRYPTION_KEY_FILE ({key_file}) is not a Fernet key" in answer.stderr


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"PROVENOTE_JOB_WORKER": "4"}, "did you mean PROVENOTE_JOB_WORKERS?"),
        (
            {"PROVENOTE_ALLOWED_ISSUERS": "https://ehr.example.org/fhir"},
            "PROVENOTE_ALLOWED_ISSUERS must be JSON (a list or an object), not a plain value; "
            "for example PROVENOTE_ALLOWED_ISSUERS='[\"https://ehr.example.org/fhir\"]'",
        ),
        ({"PROVENOTE_JOB_QUEUE": "procrastinate"}, "needs a PostgreSQL database_url"),
        (
            SHARED_LAYOUT | {"PROVENOTE_APP_SECRET": "0" * 64},
            "PROVENOTE_TOKEN_ENCRYPTION_KEY (or PROVENOTE_TOKEN_ENCRYPTION_KEY_FILE) is not set",
        ),
        (
            SHARED_LAYOUT | {"PROVENOTE_TOKEN_ENCRYPTION_KEY": FERNET_KEY},
            "PROVENOTE_APP_SECRET (or PROVENOTE_APP_SECRET_FILE) is not set",
        ),
        (
            SHARED_LAYOUT
            | {
                "PROVENOTE_TOKEN_ENCRYPTION_KEY": FERNET_KEY,
                "PROVENOTE_APP_SECRET": "0" * 64,
                "PROVENOTE_REGISTRATIONS": json.dumps(
                    [
                        {
                            "issuer": "https://ehr.example.org/fhir",
                            "client_id": "provenote",
                            "client_auth": "private_key_jwt",
                        }
                    ]
                ),
            },
            "PROVENOTE_SIGNING_KEY_FILE is not set, so each process would sign private_key_jwt "
            "assertions for https://ehr.example.org/fhir",
        ),
        (
            {"PROVENOTE_WRITEBACK_STRATEGIES": '{"https://ehr.example.org/fhir": "compositon"}'},
            "PROVENOTE_WRITEBACK_STRATEGIES: Input should be 'composition', "
            "'document-reference', 'final-only' or 'none'",
        ),
    ],
)
def test_a_server_refuses_to_start_on_settings_that_cannot_work(
    tmp_path: Path, environ: dict[str, str], said: str
) -> None:
    """check-config says what serve and worker would refuse, before anything starts."""
    for command in ("check-config", "serve", "worker"):
        answer = _provenote(command, PROVENOTE_DATA_DIR=str(tmp_path), **environ)
        assert answer.returncode == 2, answer.stderr
        assert said in answer.stderr
        assert "Traceback" not in answer.stderr and "again from the chart" not in answer.stderr


def test_the_log_lists_the_registered_ehrs_without_secrets(
    sandbox: Sandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, "provenote"),
        running_app(
            sandbox,
            tmp_path,
            client_id="app-listed",
            client_auth="client_secret_basic",
            client_secret="never-logged-secret",
        ),
    ):
        pass
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert f"registered EHR {sandbox.fhir_base}: client id app-listed, client_secret_basic" in (
        logged
    )
    assert "never-logged-secret" not in logged


def _grant(app: RunningApp, browser: httpx.Client) -> tuple[str, StoredTokens, LaunchContext]:
    """The browser's session, and the EHR's grant and launch context as the app keeps them."""
    session = browser.cookies[app.state.session_cookie]
    stored = app.call(app.state.store.tokens(session))
    context = app.call(app.state.store.stored_context(session))
    assert stored is not None and context is not None
    return session, stored, context


def test_an_ehr_grant_that_ends_without_a_refresh_says_so_and_keeps_the_draft(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The token expired and the EHR gave no refresh token: signing answers a page that says
    the EHR session ended (never a bare HTTP status), the draft and its review are kept, and
    the session ends with the grant."""
    import time

    from tests.review_support import accept_all, form_values

    with drafted_stay(sandbox, tmp_path, "ehr-grant-ends") as (app, browser, _, job):
        page = accept_all(browser, app.base_url, job["draft"])
        session, stored, context = _grant(app, browser)
        stored.tokens.refresh_token = None
        app.call(
            app.state.store.save(
                session, context, stored.model_copy(update={"expires_at": time.time() - 5})
            )
        )
        signed = browser.post(f"{app.base_url}/drafts/{job['draft']}/sign", data=form_values(page))
        assert signed.status_code == 401
        assert "Your EHR session ended" in signed.text and "launch Provenote" in signed.text
        again = browser.get(f"{app.base_url}/drafts/{job['draft']}")  # the session ended too
        assert again.status_code == 404 and "If your session ended, launch Provenote" in again.text
        kept = app.call(app.state.drafts.load(job["draft"]))
        assert kept is not None and kept.status == "preliminary"
        assert kept.revision == int(form_values(page)["revision"])  # the review, as left


def _sign_after_expiry(
    sandbox: Sandbox, tmp_path: Path, patient: str, refresh_token: str | None = None
) -> tuple[httpx.Response, Any, Any, Any]:
    """Launch, review, let the access token expire (its refresh token replaced when one is
    given), sign: (the answer, the tokens before, the tokens after, the stored draft)."""
    import time

    from tests.review_support import accept_all, form_values

    with drafted_stay(sandbox, tmp_path, patient) as (app, browser, _, job):
        page = accept_all(browser, app.base_url, job["draft"])
        session, stored, context = _grant(app, browser)
        assert stored.tokens.refresh_token
        assert {"online_access", "offline_access"} & set(context.scope.split())
        before = stored.model_copy(deep=True)
        if refresh_token is not None:
            stored.tokens.refresh_token = refresh_token
        expired = stored.model_copy(update={"expires_at": time.time() - 5})
        app.call(app.state.store.save(session, context, expired))
        signed = browser.post(f"{app.base_url}/drafts/{job['draft']}/sign", data=form_values(page))
        after = app.call(app.state.store.tokens(session))
        return signed, before, after, app.call(app.state.drafts.load(job["draft"]))


def test_a_session_with_a_refresh_token_outlives_its_access_token(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The sandbox lists online_access; the launch asks for it and the EHR's refresh token
    renews an expired access token when the physician signs."""
    signed, before, after, _ = _sign_after_expiry(sandbox, tmp_path, "ehr-grant-refreshed")
    assert signed.status_code == 200 and 'id="signed"' in signed.text
    assert after is not None and after.tokens.access_token != before.tokens.access_token


def test_a_refresh_the_ehr_refuses_says_it_was_refused_not_that_none_was_given(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The EHR gave a refresh token but refuses it now (revoked): the page says the renewal
    was refused, never that the EHR gave no way to renew; the draft is kept."""
    signed, _, _, kept = _sign_after_expiry(
        sandbox, tmp_path, "ehr-refresh-refused", refresh_token="revoked-by-the-ehr"
    )
    assert signed.status_code == 401
    assert "refused to renew" in signed.text and "no way to renew" not in signed.text
    assert kept is not None and kept.status == "preliminary"


def test_migrate_installs_the_job_queues_tables_and_a_worker_told_not_to_migrate_needs_them(
    tmp_path: Path, postgres_url: str
) -> None:
    shared = {
        "PROVENOTE_DATA_DIR": str(tmp_path),
        "PROVENOTE_DATABASE_URL": postgres_url,
        "PROVENOTE_TOKEN_ENCRYPTION_KEY": FERNET_KEY,
        "PROVENOTE_APP_SECRET": "0" * 64,
        **ONE_EHR,
    }
    only_app_tables = _provenote("migrate", **shared)  # the in-process queue has no tables
    assert only_app_tables.returncode == 0, only_app_tables.stderr
    assert "job queue" not in only_app_tables.stdout
    layout = shared | {"PROVENOTE_JOB_QUEUE": "procrastinate"}
    refused = _provenote("worker", **layout, PROVENOTE_MIGRATE_ON_START="false")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "the job queue's tables are not installed: run `provenote migrate` first" in (
        refused.stderr
    )
    first = _provenote("migrate", **layout)
    again = _provenote("migrate", **layout)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert "job queue tables installed (procrastinate)" in first.stdout
    assert "job queue tables present (procrastinate)" in again.stdout


def test_migrations_run_on_their_own_and_a_server_told_not_to_migrate_refuses_an_old_schema(
    tmp_path: Path,
) -> None:
    """For a rolling upgrade: `provenote migrate` once, then servers that do not migrate."""
    import asyncio

    from smartapp.core.db import Database
    from smartapp.core.schema import SchemaNotCurrentError

    no_migrations = {
        "PROVENOTE_DATA_DIR": str(tmp_path),
        "PROVENOTE_MIGRATE_ON_START": "false",
        **ONE_EHR,
    }
    refused = _provenote("serve", **no_migrations)
    assert refused.returncode == 2
    assert "run `provenote migrate` first" in refused.stderr and "Traceback" not in refused.stderr
    migrated = _provenote("migrate", PROVENOTE_DATA_DIR=str(tmp_path))
    assert migrated.returncode == 0, migrated.stderr
    database = Database(Settings(data_dir=tmp_path).database_dsn)

    async def revisions_then_prepare() -> tuple[str | None, str | None]:
        try:
            await database.prepare(migrate=False)  # current now: no error
            return await database.revisions()
        finally:
            await database.dispose()

    found, newest = asyncio.run(revisions_then_prepare())
    assert found == newest and f"database schema at revision {newest}" in migrated.stdout
    empty = Database(Settings(data_dir=tmp_path / "other").database_dsn)
    (tmp_path / "other").mkdir()
    with pytest.raises(SchemaNotCurrentError):
        asyncio.run(empty.prepare(migrate=False))
