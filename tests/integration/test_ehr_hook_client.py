"""The discharge service as an EHR's own CDS Hooks client meets it (tests/integration/
ehr_hook_client.py, written from the specification, signing ES384 and RS384 with kid and jku):
the whole flow from discovery to feedback, the JWTs the specification forbids, and the faults an
EHR causes (a key URL that hangs, a lent token it revoked, a lent token shaped as the
specification allows)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from launch.sandbox.run import Sandbox
from tests.attack_support import seed_stay
from tests.integration.ehr_hook_client import Algorithm, EhrHookClient, new_key, published
from tests.smart_support import RunningApp, running_app

CLIENT_ISSUER = "https://ehr-hooks.example/cds-client"


@dataclass
class Stay:
    patient: str
    encounter: str
    context: dict[str, str]
    prefetch: dict[str, Any]


@dataclass
class Hooked:
    app: RunningApp
    client: EhrHookClient
    service: dict[str, Any]
    sandbox: Sandbox

    def stay(self, patient: str) -> Stay:
        encounter = seed_stay(self.sandbox, patient)
        admin = {"x-admin-token": self.sandbox.admin_token}
        read = {
            name: httpx.get(f"{self.sandbox.fhir_base}/{kind}/{ident}", headers=admin).json()
            for name, kind, ident in (
                ("patient", "Patient", patient),
                ("encounter", "Encounter", encounter),
            )
        }
        context = {
            "userId": self.sandbox.practitioner,
            "patientId": patient,
            "encounterId": encounter,
        }
        return Stay(patient, encounter, context, read)

    def lent(self, stay: Stay) -> dict[str, Any]:
        return self.sandbox.hooks.lent_token(stay.patient, stay.encounter)

    def call(self, stay: Stay, lent: dict[str, Any] | None, token: str | None = None) -> Any:
        return self.client.call(
            self.app.base_url, self.service, stay.context, lent, stay.prefetch, token
        )

    def url(self) -> str:
        return f"{self.app.base_url}/cds-services/{self.service['id']}"

    def jobs(self, stay: Stay) -> Any:
        issuer = self.app.settings.registrations[0].issuer
        return self.app.call(self.app.state.jobs.latest_for(issuer, stay.patient, stay.encounter))


def _hooked(sandbox: Sandbox, app: RunningApp, client: EhrHookClient) -> Hooked:
    return Hooked(app, client, client.discover(app.base_url), sandbox)


def _registered_with(key_url: str) -> dict[str, object]:
    """The EHR's registration names this client's issuer and where its keys are published."""
    return {"cds_issuer": CLIENT_ISSUER, "cds_jwks_uri": key_url}


@pytest.fixture(params=["ES384", "RS384"])
def hooked(request: pytest.FixtureRequest, sandbox: Sandbox, tmp_path: Path) -> Iterator[Hooked]:
    algorithm: Algorithm = request.param
    key = new_key(algorithm)
    with (
        published(key) as keys,
        running_app(sandbox, tmp_path, registration_update=_registered_with(keys.url)) as app,
    ):
        yield _hooked(sandbox, app, EhrHookClient(CLIENT_ISSUER, sandbox.fhir_base, key, keys.url))


def _until_done(hooked: Hooked, stay: Stay) -> None:
    deadline = time.monotonic() + 120
    while (job := hooked.jobs(stay)).state not in {"done", "failed"}:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.2)
    assert job.state == "done", job.error


def test_an_ehr_signing_with_kid_and_jku_gets_a_card_a_draft_and_its_feedback_heard(
    hooked: Hooked,
) -> None:
    stay = hooked.stay(f"ehr-client-flow-{hooked.client.key.get('alg')}".lower())
    assert "usageRequirements" in hooked.service and hooked.service["prefetch"]
    drafting = hooked.call(stay, hooked.lent(stay))
    assert drafting.status_code == 200, drafting.text
    (card,) = drafting.json()["cards"]
    assert card["summary"] == "Drafting the discharge summary"
    _until_done(hooked, stay)
    ready = hooked.call(stay, hooked.lent(stay))
    (card,) = ready.json()["cards"]
    assert card["summary"].startswith("Discharge summary draft ready")
    heard = hooked.client.feedback(hooked.app.base_url, hooked.service, card["uuid"], "accepted")
    assert (heard.status_code, heard.content) == (200, b"")


BENDS = {
    "another service's audience": {"audience": "https://elsewhere.example/cds-services/x"},
    "expired": {"issued_ago_s": 400, "lifetime_s": 60},
    "living longer than five minutes": {"lifetime_s": 3600},
    "issued long ago with minutes left": {"issued_ago_s": 3000, "lifetime_s": 3120},
}


@pytest.mark.parametrize("bend", sorted(BENDS))
def test_jwts_the_specification_forbids_are_refused_and_queue_nothing(
    hooked: Hooked, bend: str
) -> None:
    stay = hooked.stay(f"ehr-client-bent-{len(hooked.client.sent)}-{bend[:8]}".replace(" ", "-"))
    options = dict(BENDS[bend])
    audience = str(options.pop("audience", hooked.url()))
    token = hooked.client.jwt_for(audience, **options)  # type: ignore[arg-type]
    refused = hooked.call(stay, hooked.lent(stay), token)
    assert refused.status_code == 401, (bend, refused.text)
    assert refused.json()["error"] == "invalid_token"
    assert hooked.jobs(stay) is None


def test_a_replayed_jwt_and_a_key_published_only_at_its_own_jku_are_refused(
    hooked: Hooked,
) -> None:
    """The service takes keys from the EHR's registration, never from a JWT's ``jku``: a JWT
    signed by a key published elsewhere is refused, as is a JWT used twice."""
    stay = hooked.stay(f"ehr-client-replay-{hooked.client.key.get('alg')}".lower())
    token = hooked.client.jwt_for(hooked.url())
    assert hooked.call(stay, hooked.lent(stay), token).status_code == 200
    replayed = hooked.call(stay, hooked.lent(stay), token)
    assert replayed.status_code == 401 and "used before" in replayed.json()["error_description"]
    intruder = new_key("ES384")
    with published(intruder) as elsewhere:
        forged = hooked.client.jwt_for(hooked.url(), key=intruder, jku=elsewhere.url)
        refused = hooked.call(stay, hooked.lent(stay), forged)
        assert elsewhere.asked == 0  # the jku was never followed
    assert refused.status_code == 401


def test_a_lent_token_shaped_as_the_specification_allows_and_one_the_ehr_revoked(
    hooked: Hooked,
) -> None:
    """``subject`` may be absent and ``token_type`` in any case; a revoked token drafts as
    Provenote itself, and the card says so."""
    shaped = hooked.stay(f"ehr-client-shaped-{hooked.client.key.get('alg')}".lower())
    lent = hooked.lent(shaped)
    del lent["subject"]
    lent["token_type"] = "bearer"
    assert hooked.call(shaped, lent).status_code == 200
    assert hooked.jobs(shaped).origin == "hook"
    revoked = hooked.stay(f"ehr-client-revoked-{hooked.client.key.get('alg')}".lower())
    lent = hooked.lent(revoked) | {"access_token": "revoked-by-the-ehr"}
    answer = hooked.call(revoked, lent)
    (card,) = answer.json()["cards"]
    assert "drafts with its own access" in card["detail"] and card["indicator"] == "warning"
    assert hooked.jobs(revoked).origin == "predraft"


def test_a_key_url_that_hangs_holds_no_call_and_is_not_asked_again_at_once(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    key = new_key("ES384")
    with (
        published(key, hang_s=8) as hanging,
        running_app(sandbox, tmp_path, registration_update=_registered_with(hanging.url)) as app,
    ):
        client = EhrHookClient(CLIENT_ISSUER, sandbox.fhir_base, key, hanging.url)
        hooked = _hooked(sandbox, app, client)
        stay = hooked.stay("ehr-client-hanging-keys")
        answers = [hooked.call(stay, hooked.lent(stay)) for _ in range(3)]
        asked = hanging.asked
    assert [answer.status_code for answer in answers] == [503, 503, 503]
    assert answers[0].json()["error"] == "temporarily_unavailable"
    assert asked == 1  # the failure is remembered: no fetch per call
