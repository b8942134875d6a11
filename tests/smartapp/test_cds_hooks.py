"""The CDS Hooks discharge service over real HTTP: the sandbox EHR's chart starts a discharge,
Provenote answers a card at once and drafts in the background, and a second call finds the
draft waiting. Calls that are not a registered EHR's, signed for this service and seen once,
are refused with an error body and cause no request to the FHIR server."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import KeySet
from prometheus_client import REGISTRY

from launch.sandbox.cds_client import HookAnswer, new_hook_key, signed_hook_jwt
from launch.sandbox.run import Sandbox
from smartapp.cds.caller import HookKeys, HookRefusedError, verified_caller
from smartapp.cds.controllers import service_url
from smartapp.cds.discharge import LENT_TOKEN_REFUSED, SERVICE_ID, indicator_for
from smartapp.core.db import Database
from smartapp.core.settings import Settings
from smartapp.core.statuses import JobState
from smartapp.drafts.review import reviewed
from tests.attack_support import as_json, recording_server, seed_stay
from tests.review_support import accept_all, form_values
from tests.smart_support import RunningApp, running_app

DIAGNOSIS = {
    "resourceType": "Condition",
    "id": "{encounter}-pneumonia",
    "clinicalStatus": {
        "coding": [
            {
                "system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                "code": "active",
            }
        ]
    },
    "code": {
        "coding": [{"system": "http://snomed.info/sct", "code": "233604007"}],
        "text": "Pneumonia",
    },
    "subject": {"reference": "Patient/{patient}"},
    "encounter": {"reference": "Encounter/{encounter}"},
    "onsetDateTime": "2024-03-01T09:00:00Z",
}
OUTPATIENT = {
    "resourceType": "Encounter",
    "id": "{encounter}-clinic",
    "status": "finished",
    "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
    "subject": {"reference": "Patient/{patient}"},
    "period": {"start": "2024-02-01T08:00:00Z", "end": "2024-02-01T09:00:00Z"},
}


@pytest.fixture
def hooked(sandbox: Sandbox, tmp_path: Path) -> Iterator[RunningApp]:
    with running_app(sandbox, tmp_path) as app:
        yield app


def discharge(sandbox: Sandbox, app: RunningApp, patient: str, encounter: str) -> HookAnswer:
    """ "Start discharge" in the sandbox chart's CDS client (signed JWT, prefetch, lent token)."""
    return asyncio.run(
        sandbox.hooks.discharge(app.base_url, patient, encounter, sandbox.practitioner)
    )


def job_of(app: RunningApp, patient: str, encounter: str) -> dict:
    issuer = app.settings.registrations[0].issuer
    job = app.call(app.state.jobs.latest_for(issuer, patient, encounter))
    assert job is not None
    return {"id": job.id, "state": job.state, "origin": job.origin}


def jobs_of_stay(app: RunningApp, encounter: str) -> int:
    async def count() -> int:
        from sqlalchemy import func, select

        from smartapp.core.tables import JobRow

        async with app.state.database.sessions() as session:
            found = await session.scalar(
                select(func.count()).select_from(JobRow).where(JobRow.encounter == encounter)
            )
        return found or 0

    return app.call(count())


def until_done(app: RunningApp, job_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = app.call(app.state.jobs.get(job_id))
        assert job is not None
        if job.state in {JobState.DONE, JobState.FAILED}:
            assert job.state == JobState.DONE, job.error
            return
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


def test_discovery_lists_the_discharge_service_with_its_prefetch(hooked: RunningApp) -> None:
    listed = httpx.get(f"{hooked.base_url}/cds-services").json()
    (service,) = listed["services"]
    assert service["hook"] == "encounter-discharge"
    assert service["id"] == SERVICE_ID
    assert service["description"] and service["title"]
    assert service["prefetch"] == {
        "patient": "Patient/{{context.patientId}}",
        "encounter": "Encounter/{{context.encounterId}}",
    }


def test_discovery_says_what_the_cards_link_needs(hooked: RunningApp) -> None:
    (service,) = httpx.get(f"{hooked.base_url}/cds-services").json()["services"]
    needs = service["usageRequirements"]
    assert "cds_jwks_uri" in needs and "SMART EHR launch" in needs
    assert "read of Patient, Encounter, DocumentReference" in needs
    assert "write of Composition, DocumentReference" in needs


def feedback(
    sandbox: Sandbox, app: RunningApp, card: str, outcome: str, **reason: Any
) -> httpx.Response:
    return asyncio.run(sandbox.hooks.feedback(app.base_url, SERVICE_ID, card, outcome, **reason))


def feedback_rows(app: RunningApp) -> list[tuple[str, str, str | None, str | None]]:
    async def rows() -> list[tuple[str, str, str | None, str | None]]:
        from sqlalchemy import select

        from smartapp.core.tables import CdsFeedbackRow

        async with app.state.database.sessions() as session:
            found = await session.execute(
                select(
                    CdsFeedbackRow.card_uuid,
                    CdsFeedbackRow.outcome,
                    CdsFeedbackRow.reason_code,
                    CdsFeedbackRow.user_comment,
                ).order_by(CdsFeedbackRow.id)
            )
            return [tuple(row) for row in found.all()]  # type: ignore[misc]

    return app.call(rows())


def fed_back(outcome: str, card: str, reason: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "provenote_cds_feedback_total", {"outcome": outcome, "card": card, "reason": reason}
        )
        or 0.0
    )


def test_what_physicians_do_with_the_card_is_recorded_and_counted(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    """The EHR's feedback (CDS Hooks 2.0): accepted, or overridden with one of the reasons the
    card offers and a comment; each recorded against the card and counted by outcome, card and
    reason (the comment is never a label)."""
    patient = "hook-feedback"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    (card,) = discharge(sandbox, hooked, patient, encounter).cards
    offered = {reason["code"] for reason in card["overrideReasons"]}
    assert {"writing-myself", "not-needed", "wrong-stay", "review-later"} == offered
    reason = next(r for r in card["overrideReasons"] if r["code"] == "not-needed")
    accepted_before = fed_back("accepted", "drafting", "none")
    overridden_before = fed_back("overridden", "drafting", "not-needed")

    accepted = feedback(sandbox, hooked, card["uuid"], "accepted")
    overridden = feedback(
        sandbox, hooked, card["uuid"], "overridden", reason=reason, comment="Day case after all"
    )
    assert (accepted.status_code, accepted.content) == (200, b"")
    assert overridden.status_code == 200
    assert feedback_rows(hooked) == [
        (card["uuid"], "accepted", None, None),
        (card["uuid"], "overridden", "not-needed", "Day case after all"),
    ]
    assert fed_back("accepted", "drafting", "none") == accepted_before + 1
    assert fed_back("overridden", "drafting", "not-needed") == overridden_before + 1


def test_feedback_about_a_card_never_given_is_refused_whole_and_unsigned_feedback_is_refused(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    patient = "hook-feedback-refused"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    (card,) = discharge(sandbox, hooked, patient, encounter).cards
    url = f"{hooked.base_url}/cds-services/{SERVICE_ID}/feedback"
    issuer = sandbox.hooks.issuer
    signed = {"authorization": f"Bearer {signed_hook_jwt(sandbox.hooks.key, issuer, url)}"}
    now = "2026-12-05T10:00:00Z"
    mixed = {
        "feedback": [
            {"card": card["uuid"], "outcome": "accepted", "outcomeTimestamp": now},
            {"card": str(uuid.uuid4()), "outcome": "accepted", "outcomeTimestamp": now},
        ]
    }
    refused = httpx.post(url, json=mixed, headers=signed)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"
    assert "never given to this EHR" in refused.json()["error_description"]
    assert feedback_rows(hooked) == []  # nothing of the request was recorded
    fresh = {"authorization": f"Bearer {signed_hook_jwt(sandbox.hooks.key, issuer, url)}"}
    malformed = httpx.post(url, json={"feedback": [{"card": card["uuid"]}]}, headers=fresh)
    assert malformed.status_code == 400
    assert "feedback.0.outcome: Field required" in malformed.json()["error_description"]
    unsigned = httpx.post(url, json={"feedback": mixed["feedback"][:1]})
    assert unsigned.status_code == 401 and feedback_rows(hooked) == []


def test_a_discharge_call_queues_one_draft_and_a_second_call_finds_it_ready(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    patient = "hook-ready"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)

    first = discharge(sandbox, hooked, patient, encounter)
    assert first.status == 200, first.error
    (card,) = first.cards
    assert card["summary"] == "Drafting the discharge summary"
    assert card["indicator"] == "info" and card["source"]["label"] == "Provenote"
    (link,) = card["links"]
    assert link["type"] == "smart" and link["url"] == hooked.settings.launch_url
    job = job_of(hooked, patient, encounter)
    assert json.loads(link["appContext"]) == {"job": job["id"]}
    assert job["origin"] == "hook"  # drafted with the token the chart lent

    again = discharge(sandbox, hooked, patient, encounter)  # while it drafts: the same job
    named = json.loads(again.cards[0]["links"][0]["appContext"])
    if "draft" in named:  # the draft was ready already: it is this job's
        assert hooked.call(hooked.state.drafts.get(named["draft"])).job_id == job["id"]
    else:
        assert named == {"job": job["id"]}
    assert jobs_of_stay(hooked, encounter) == 1

    until_done(hooked, job["id"])
    draft = hooked.call(hooked.state.drafts.of_job(job["id"]))
    assert draft is not None
    # Drafted ahead: nothing is written to the chart before a physician opens it.
    assert hooked.call(hooked.state.drafts.write_back_of(draft.id)) is None

    ready = discharge(sandbox, hooked, patient, encounter)
    (card,) = ready.cards
    loaded = hooked.call(hooked.state.drafts.load(draft.id))
    open_flags = reviewed(loaded).open_flags
    noun = "flag" if len(open_flags) == 1 else "flags"
    assert card["summary"] == f"Discharge summary draft ready: {len(open_flags)} {noun} to review"
    assert card["indicator"] == indicator_for(open_flags)
    assert json.loads(card["links"][0]["appContext"]) == {"draft": draft.id}
    assert jobs_of_stay(hooked, encounter) == 1  # ready: nothing drafted again

    # The card's link launches into the draft, which is then written to the chart; once it is
    # signed, the hook has nothing more to say.
    named = card["links"][0]["appContext"]
    with httpx.Client(follow_redirects=True, timeout=60) as stranger:
        # Another patient's launch naming this draft never opens it.
        other = "hook-other"
        seed_stay(sandbox, other)
        elsewhere = stranger.post(
            f"{sandbox.chart_url}/launch", data={"patient": other, "app_context": named}
        )
        assert elsewhere.status_code == 200 and draft.id not in str(elsewhere.url)
    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        # The launch names no encounter: the card's appContext says which stay's draft to open.
        opened = browser.post(
            f"{sandbox.chart_url}/launch", data={"patient": patient, "app_context": named}
        )
        assert opened.status_code == 200
        assert str(opened.url).endswith(f"/drafts/{draft.id}")
        deadline = time.monotonic() + 30
        while hooked.call(hooked.state.drafts.write_back_of(draft.id)) is None:
            assert time.monotonic() < deadline, "the opened draft was never written to the chart"
            time.sleep(0.2)
        page = accept_all(browser, hooked.base_url, draft.id)
        signed = browser.post(f"{hooked.base_url}/drafts/{draft.id}/sign", data=form_values(page))
        assert signed.status_code == 200 and 'id="signed"' in signed.text
    after_signing = discharge(sandbox, hooked, patient, encounter)
    assert after_signing.status == 200 and after_signing.cards == []
    assert jobs_of_stay(hooked, encounter) == 1


def test_a_stay_that_is_not_inpatient_gets_no_card(sandbox: Sandbox, hooked: RunningApp) -> None:
    patient = "hook-clinic"
    stay = seed_stay(sandbox, patient, OUTPATIENT)
    answer = discharge(sandbox, hooked, patient, f"{stay}-clinic")
    assert answer.status == 200 and answer.cards == []
    assert jobs_of_stay(hooked, f"{stay}-clinic") == 0


def test_an_ehr_whose_registration_turns_the_service_off_gets_no_card(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with running_app(sandbox, tmp_path) as app:
        registration = app.settings.registrations[0]
        off = registration.model_copy(update={"cds_hooks": False})
        app.settings.registrations[0] = off
        patient = "hook-off"
        encounter = seed_stay(sandbox, patient, DIAGNOSIS)
        answer = discharge(sandbox, app, patient, encounter)
        assert answer.status == 200 and answer.cards == []
        assert jobs_of_stay(app, encounter) == 0


def _call(app: RunningApp, body: dict, token: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.post(service_url(app.settings), json=body, headers=headers, timeout=30)


def _signed_call(sandbox: Sandbox, app: RunningApp, body: dict) -> httpx.Response:
    """The call as the sandbox EHR signs it for this app."""
    signed = signed_hook_jwt(sandbox.hooks.key, sandbox.hooks.issuer, service_url(app.settings))
    return _call(app, body, signed)


def assert_drafted_as_provenote(app: RunningApp, patient: str, encounter: str) -> None:
    """The stay's job was queued by the hook, as Provenote's own, and delivered a draft."""
    job = job_of(app, patient, encounter)
    assert job["origin"] == "predraft"
    until_done(app, job["id"])
    assert app.call(app.state.drafts.of_job(job["id"])) is not None


def _body(sandbox: Sandbox, patient: str, encounter: str, fhir_server: str | None = None) -> dict:
    """A well-formed call whose prefetch holds the stay (an accepted call reads nothing before
    it decides; queueing reads the stay once with the lent token)."""
    stay = httpx.get(
        f"{sandbox.fhir_base}/Encounter/{encounter}",
        headers={"x-admin-token": sandbox.admin_token},
    ).json()
    return {
        "hook": "encounter-discharge",
        "hookInstance": "d1577c69-dfbe-44ad-ba6d-3e05e953b2ea",
        "fhirServer": fhir_server or sandbox.fhir_base,
        "fhirAuthorization": sandbox.hooks.lent_token(patient, encounter),
        "context": {
            "userId": sandbox.practitioner,
            "patientId": patient,
            "encounterId": encounter,
        },
        "prefetch": {"encounter": stay},
    }


def test_refused_calls_say_why_and_reach_no_fhir_server(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    patient = "hook-refused"
    stay = seed_stay(sandbox, patient, OUTPATIENT)
    clinic = f"{stay}-clinic"  # an accepted call for it answers no card and queues nothing
    body = _body(sandbox, patient, clinic)
    audience = service_url(hooked.settings)
    key, issuer = sandbox.hooks.key, sandbox.hooks.issuer
    stranger = new_hook_key()
    replayed = signed_hook_jwt(key, issuer, audience)

    def signed(**claims: object) -> str:
        return signed_hook_jwt(key, issuer, audience, **claims)

    assert _call(hooked, body, replayed).status_code == 200  # first use

    with recording_server() as elsewhere:
        before = sandbox.fhir_requests()
        refused = {
            "unsigned": (_call(hooked, body, None), 401),
            "not a JWT": (_call(hooked, body, "not-a-jwt"), 401),
            "unknown issuer": (
                _call(hooked, body, signed_hook_jwt(stranger, "https://ehr.example/", audience)),
                401,
            ),
            "another key": (_call(hooked, body, signed_hook_jwt(stranger, issuer, audience)), 401),
            "replayed jti": (_call(hooked, body, replayed), 401),
            "wrong aud": (
                _call(hooked, body, signed_hook_jwt(key, issuer, f"{hooked.base_url}/other")),
                401,
            ),
            "expired": (
                _call(hooked, body, signed_hook_jwt(key, issuer, audience, lifetime_s=-60)),
                401,
            ),
            "long-lived": (
                _call(hooked, body, signed_hook_jwt(key, issuer, audience, lifetime_s=3600)),
                401,
            ),
            "fhirServer not the registration's": (
                _call(
                    hooked,
                    _body(sandbox, patient, clinic, fhir_server=f"{elsewhere.url}/fhir"),
                    signed(),
                ),
                403,
            ),
            "not encounter-discharge": (
                _call(
                    hooked, body | {"hook": "patient-view"}, signed_hook_jwt(key, issuer, audience)
                ),
                400,
            ),
            "no encounterId": (
                _call(
                    hooked,
                    body | {"context": {"userId": sandbox.practitioner, "patientId": patient}},
                    signed(),
                ),
                400,
            ),
        }
        assert sandbox.fhir_requests() == before
        assert elsewhere.requests == []
    for why, (answer, status) in refused.items():
        assert answer.status_code == status, (why, answer.text)
        problem = answer.json()
        assert set(problem) == {"error", "error_description"}, why
        assert problem["error_description"], why
        if status == 401:
            assert answer.headers["www-authenticate"].startswith("Bearer error="), why
    assert jobs_of_stay(hooked, clinic) == 0


def test_keys_are_read_from_the_registered_jwks_uri(sandbox: Sandbox) -> None:
    """The sandbox publishes the key that signs its calls where the registration points."""
    published = httpx.get(f"{sandbox.issuer}/cds-jwks").json()
    assert KeySet.import_key_set(published).get_by_kid(sandbox.hooks.key.kid)
    assert "d" not in published["keys"][0]  # the public half only


def test_a_call_that_lends_no_token_drafts_as_provenote_itself(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    """Without fhirAuthorization the job acts with the registration's Backend Services client."""
    patient = "hook-no-token"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    body = _body(sandbox, patient, encounter)
    del body["fhirAuthorization"], body["fhirServer"]
    answer = _signed_call(sandbox, hooked, body)
    assert answer.status_code == 200, answer.text
    (card,) = answer.json()["cards"]
    assert card["summary"] == "Drafting the discharge summary"
    assert_drafted_as_provenote(hooked, patient, encounter)


def test_a_lent_token_the_ehr_refuses_drafts_as_provenote_itself_and_the_card_says_so(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    """The chart lends a token the EHR no longer accepts (revoked): the job does not start on
    it and fail a moment later; it drafts with the registration's Backend Services client, and
    the card tells the physician why."""
    patient = "hook-revoked"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    body = _body(sandbox, patient, encounter)
    body["fhirAuthorization"]["access_token"] = "revoked-by-the-ehr"
    answer = _signed_call(sandbox, hooked, body)
    assert answer.status_code == 200, answer.text
    (card,) = answer.json()["cards"]
    assert card["detail"].endswith(LENT_TOKEN_REFUSED) and card["indicator"] == "warning"
    assert_drafted_as_provenote(hooked, patient, encounter)


def test_a_lent_token_refused_where_provenote_has_no_access_of_its_own_is_a_412(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with running_app(sandbox, tmp_path) as app:
        registration = app.settings.registrations[0]
        update = {"backend_client_id": None, "client_auth": "public"}
        app.settings.registrations[0] = registration.model_copy(update=update)
        patient = "hook-revoked-no-backend"
        encounter = seed_stay(sandbox, patient, DIAGNOSIS)
        body = _body(sandbox, patient, encounter)
        body["fhirAuthorization"]["access_token"] = "revoked-by-the-ehr"
        answer = _signed_call(sandbox, app, body)
        assert answer.status_code == 412
        assert answer.json()["error"] == "precondition_failed"
        assert "no Backend Services client" in answer.json()["error_description"]
        assert jobs_of_stay(app, encounter) == 0


def test_a_lent_token_the_ehr_ends_mid_pull_is_replaced_by_provenotes_own_access(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    """The token worked when the hook was called, then the EHR ends it while the job pulls: the
    job goes on as Provenote itself from what it had, instead of failing."""
    patient = "hook-ended-mid-pull"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    sandbox.set_fault("401", count=1, match="GET /MedicationRequest")
    try:
        first = discharge(sandbox, hooked, patient, encounter)
        assert first.status == 200, first.error
        job = job_of(hooked, patient, encounter)
        until_done(hooked, job["id"])
    finally:
        sandbox.set_fault("none", count=0)
    assert job_of(hooked, patient, encounter)["origin"] == "predraft"
    assert hooked.call(hooked.state.drafts.of_job(job["id"])) is not None


def test_a_stay_whose_last_attempt_failed_is_drafted_again_and_the_card_says_so(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with running_app(sandbox, tmp_path, fhir_max_retries=0) as app:
        patient = "hook-failed-before"
        encounter = seed_stay(sandbox, patient, DIAGNOSIS)
        sandbox.set_fault("500", count=1, match="GET /MedicationRequest")
        try:
            first = discharge(sandbox, app, patient, encounter)
            failed = job_of(app, patient, encounter)
            deadline = time.monotonic() + 60
            while job_of(app, patient, encounter)["state"] != JobState.FAILED:
                assert time.monotonic() < deadline, "the job did not fail"
                time.sleep(0.1)
        finally:
            sandbox.set_fault("none", count=0)
        assert first.cards[0]["indicator"] == "info"
        error = app.call(app.state.jobs.get(failed["id"])).error
        again = discharge(sandbox, app, patient, encounter)
        (card,) = again.cards
        assert card["detail"].endswith(
            f"The last drafting attempt failed ({error}); drafting again."
        )
        assert card["indicator"] == "warning"
        assert job_of(app, patient, encounter)["id"] != failed["id"]


def test_a_launch_into_a_waiting_draft_is_counted_with_its_age(
    sandbox: Sandbox, hooked: RunningApp
) -> None:
    from prometheus_client import REGISTRY

    def ready_launches() -> float:
        found = REGISTRY.get_sample_value("provenote_draft_at_launch_total", {"found": "ready"})
        return found or 0.0

    def ages() -> float:
        return REGISTRY.get_sample_value("provenote_draft_age_at_launch_seconds_count") or 0.0

    patient = "hook-metrics"
    encounter = seed_stay(sandbox, patient, DIAGNOSIS)
    job = json.loads(
        discharge(sandbox, hooked, patient, encounter).cards[0]["links"][0]["appContext"]
    )
    until_done(hooked, job["job"])
    before, aged = ready_launches(), ages()
    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        opened = browser.post(
            f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
        )
    assert "/drafts/" in str(opened.url)
    assert ready_launches() == before + 1
    assert ages() == aged + 1


def test_a_replayed_jwt_is_refused_by_another_process_on_the_same_database(
    sandbox: Sandbox, tmp_path: Path, database_url: str | None
) -> None:
    """Two processes (two engines) on one database, SQLite or PostgreSQL: a JWT the first
    accepted, the second refuses."""
    settings = Settings(
        base_url="http://127.0.0.1:8765", data_dir=tmp_path, database_url=database_url
    )
    settings = sandbox.configure(settings)
    audience = service_url(settings)
    bearer = f"Bearer {signed_hook_jwt(sandbox.hooks.key, sandbox.hooks.issuer, audience)}"

    async def twice() -> str:
        first, second = Database(settings.database_dsn), Database(settings.database_dsn)
        await first.prepare(True)
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                accepted = await verified_caller(
                    bearer, audience, settings, HookKeys(http, settings), first
                )
                with pytest.raises(HookRefusedError, match="replayed"):
                    await verified_caller(
                        bearer, audience, settings, HookKeys(http, settings), second
                    )
        finally:
            await first.dispose()
            await second.dispose()
        return accepted.issuer

    assert asyncio.run(twice()) == sandbox.fhir_base


def test_a_flood_of_calls_signed_by_unknown_keys_fetches_the_ehrs_keys_once(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """JWTs naming keys the EHR never published are refused from the cache: the EHR's key set
    is fetched once, not once per forged call (smartapp.core.jwks, as for the FHIR API)."""
    with recording_server() as ehr_keys:
        ehr_keys.routes["/jwks"] = lambda request: as_json(sandbox.hooks.jwks())
        settings = sandbox.configure(Settings(base_url="http://127.0.0.1:8765", data_dir=tmp_path))
        registration = settings.registrations[0].model_copy(
            update={"cds_jwks_uri": f"{ehr_keys.url}/jwks"}
        )
        settings = settings.model_copy(update={"registrations": [registration]})
        audience = service_url(settings)
        issuer = sandbox.hooks.issuer

        async def flood() -> list[str]:
            database = Database(settings.database_dsn)
            await database.prepare(True)
            refusals = []
            try:
                async with httpx.AsyncClient(timeout=30) as http:
                    keys = HookKeys(http, settings)
                    good = f"Bearer {signed_hook_jwt(sandbox.hooks.key, issuer, audience)}"
                    await verified_caller(good, audience, settings, keys, database)
                    for _ in range(20):
                        forged = f"Bearer {signed_hook_jwt(new_hook_key(), issuer, audience)}"
                        with pytest.raises(HookRefusedError) as refused:
                            await verified_caller(forged, audience, settings, keys, database)
                        refusals.append(refused.value.description)
            finally:
                await database.dispose()
            return refusals

        refusals = asyncio.run(flood())
        assert set(refusals) == {"the JWT is signed by a key the EHR does not publish"}
        assert [request.path for request in ehr_keys.requests] == ["/jwks"]
