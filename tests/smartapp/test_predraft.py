"""Pre-drafting against the sandbox EHR's real FHIR server, as Provenote itself (SMART Backend
Services): every in-progress inpatient stay whose discharge is in sight is drafted once, drafted
again only after its record changed, and nothing is written to the chart before a physician
opens a draft. ``provenote predraft`` does the same from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from launch.sandbox.clients import RegisteredClient
from launch.sandbox.run import BACKEND_CLIENT_ID, Sandbox
from smartapp.core.keys import public_jwks, registration_key
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings
from smartapp.core.statuses import DraftStatus, JobState
from smartapp.jobs.predraft import PredraftRound, Stay, discharge_in_sight
from smartapp.worker import predraft_schedule, predrafting
from tests.attack_support import seed_stay
from tests.conftest import ROOT
from tests.smart_support import RunningApp, running_app

LOUNGE = "Location/discharge-lounge"
GOING_HOME = {"dischargeDisposition": {"text": "Home"}}
ENDED = {"start": "2024-03-01T08:00:00Z", "end": "2024-03-05T10:00:00Z"}
CONDITION = {
    "resourceType": "Condition",
    "id": "{encounter}-cellulitis",
    "clinicalStatus": {
        "coding": [
            {
                "system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                "code": "active",
            }
        ]
    },
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "128045006"}]},
    "subject": {"reference": "Patient/{patient}"},
    "encounter": {"reference": "Encounter/{encounter}"},
    "onsetDateTime": "2024-03-01T09:00:00Z",
}


def admin(box: Sandbox) -> httpx.Client:
    return httpx.Client(headers={"x-admin-token": box.admin_token}, timeout=30)


def in_progress(box: Sandbox, patient: str, kind: str = "IMP", **changes: object) -> Stay:
    """A stay under way for a patient of its own: no end yet, and ``changes`` on its
    encounter (a discharge disposition, an end, a location)."""
    encounter = seed_stay(box, patient, CONDITION)
    with admin(box) as client:
        url = f"{box.fhir_base}/Encounter/{encounter}"
        resource = client.get(url).json()
        resource.pop("meta", None)
        resource["status"] = "in-progress"
        resource["class"]["code"] = kind
        resource["period"] = {"start": "2024-03-01T08:00:00Z"}
        resource.update(changes)
        client.put(url, json=resource).raise_for_status()
    return Stay(patient, encounter)


@pytest.fixture(scope="module")
def ward() -> Iterator[Sandbox]:
    """A sandbox of its own: the stays it puts in progress are no other test's business."""
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        yield box


def ahead(app: RunningApp) -> ClientRegistration:
    """The app's registration with the ward, drafting ahead, with the discharge lounge."""
    registration = app.settings.registrations[0].model_copy(
        update={"predraft": True, "discharge_locations": [LOUNGE]}
    )
    app.settings.registrations[0] = registration
    return registration


def run_round(app: RunningApp, registration: ClientRegistration) -> PredraftRound:
    done = app.call(predrafting(app.state).round(registration))
    for job_id in done.queued_jobs:
        deadline = time.monotonic() + 120
        while (job := app.call(app.state.jobs.get(job_id))).state not in {
            JobState.DONE,
            JobState.FAILED,
        }:
            assert time.monotonic() < deadline, f"job {job_id} did not end"
            time.sleep(0.2)
        assert job.state == JobState.DONE, job.error
    return done


def drafts_of(app: RunningApp, registration: ClientRegistration, stay: Stay):
    return app.call(
        app.state.drafts.latest_for_stay(registration.issuer, stay.patient, stay.encounter)
    )


def notes_on_the_chart(box: Sandbox, patient: str) -> int:
    with admin(box) as client:
        found = client.get(f"{box.fhir_base}/Composition", params={"patient": f"Patient/{patient}"})
        return len(found.json().get("entry", []))


def test_a_discharge_is_in_sight_by_disposition_end_or_location() -> None:
    assert discharge_in_sight(
        {"hospitalization": {"dischargeDisposition": {"text": "home"}}}, set()
    )
    assert discharge_in_sight({"period": {"start": "2024-03-01", "end": "2024-03-04"}}, set())
    at_lounge = {"location": [{"location": {"reference": LOUNGE}}]}
    assert discharge_in_sight(at_lounge, {LOUNGE})
    assert not discharge_in_sight(at_lounge, set())
    assert not discharge_in_sight({"period": {"start": "2024-03-01"}}, {LOUNGE})


def test_every_stay_in_sight_is_drafted_once_and_again_only_after_a_change(
    ward: Sandbox, tmp_path: Path
) -> None:
    disposed = in_progress(
        ward, "ahead-disposed", hospitalization={"dischargeDisposition": {"text": "Home"}}
    )
    ending = in_progress(
        ward,
        "ahead-ending",
        period={"start": "2024-03-01T08:00:00Z", "end": "2024-03-05T10:00:00Z"},
    )
    lounging = in_progress(ward, "ahead-lounge", location=[{"location": {"reference": LOUNGE}}])
    staying = in_progress(ward, "ahead-staying")  # no discharge in sight
    clinic = in_progress(
        ward, "ahead-clinic", "AMB", hospitalization={"dischargeDisposition": {"text": "Home"}}
    )
    with running_app(ward, tmp_path) as app:
        registration = ahead(app)

        mine = (disposed, ending, lounging, staying, clinic)

        def outcomes(done: PredraftRound) -> dict[Stay, str | None]:
            """This test's stays (the ward's others are other tests')."""
            return {stay: done.outcomes.get(stay) for stay in mine}

        first = run_round(app, registration)
        assert outcomes(first) == {
            disposed: "queued",
            ending: "queued",
            lounging: "queued",
            staying: None,  # no discharge in sight
            clinic: None,  # not inpatient
        }
        for stay in (disposed, ending, lounging):
            draft = drafts_of(app, registration, stay)
            assert draft is not None and draft.version == 1
            job = app.call(app.state.jobs.get(draft.job_id))
            assert job is not None and job.origin == "predraft"
            # Nothing on the chart before a physician opens the draft.
            assert app.call(app.state.drafts.write_back_of(draft.id)) is None
            assert notes_on_the_chart(ward, stay.patient) == 0
        for stay in (staying, clinic):
            assert drafts_of(app, registration, stay) is None

        second = run_round(app, registration)
        assert outcomes(second) == dict.fromkeys(mine[:3], "unchanged") | dict.fromkeys(mine[3:])
        assert second.queued_jobs == []

        with admin(ward) as client:  # the record of one stay changes
            allergy = {
                "resourceType": "AllergyIntolerance",
                "id": f"{disposed.encounter}-penicillin",
                "patient": {"reference": f"Patient/{disposed.patient}"},
                "encounter": {"reference": f"Encounter/{disposed.encounter}"},
                "code": {"text": "Penicillin"},
                "recordedDate": "2024-03-02T10:00:00Z",
            }
            client.put(
                f"{ward.fhir_base}/AllergyIntolerance/{allergy['id']}", json=allergy
            ).raise_for_status()
        third = run_round(app, registration)
        assert outcomes(third) == {
            disposed: "redrafted",
            ending: "unchanged",
            lounging: "unchanged",
            staying: None,
            clinic: None,
        }
        redrafted = drafts_of(app, registration, disposed)
        assert redrafted.version == 2
        assert "Penicillin" in redrafted.markdown
        assert app.call(app.state.drafts.get(first_draft_id(app, first, disposed))).status == (
            DraftStatus.SUPERSEDED
        )


def first_draft_id(app: RunningApp, done: PredraftRound, stay: Stay) -> str:
    for job_id in done.queued_jobs:
        draft = app.call(app.state.drafts.of_job(job_id))
        if draft is not None and draft.encounter == stay.encounter:
            return draft.id
    raise AssertionError(f"no draft of {stay}")


def test_provenote_predraft_drafts_ahead_from_the_command_line(tmp_path: Path) -> None:
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        stay = in_progress(
            box, "cli-ahead", hospitalization={"dischargeDisposition": {"text": "Home"}}
        )
        settings = Settings(data_dir=tmp_path, client_auth="private_key_jwt")
        registration = box.registration(settings).model_copy(update={"predraft": True})
        key = registration_key(settings, registration.backend())
        assert key is not None
        # A real EHR holds the app's public key (or its JWKS URL) for the backend client.
        box.register(
            RegisteredClient(BACKEND_CLIENT_ID, "private_key_jwt", jwks=public_jwks([key]))
        )
        environment = os.environ | {
            "PROVENOTE_DATA_DIR": str(tmp_path),
            "PROVENOTE_CLIENT_AUTH": "private_key_jwt",
            "PROVENOTE_REGISTRATIONS": json.dumps(
                [registration.model_dump(mode="json", exclude_none=True)]
            ),
        }

        def predraft() -> str:
            done = subprocess.run(
                [sys.executable, "-m", "launch.cli", "predraft", "--wait", "120"],
                cwd=ROOT,
                env=environment,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            return done.stdout

        assert f"{box.fhir_base}: 1 stays in sight (1 queued)" in predraft()
        assert f"{box.fhir_base}: 1 stays in sight (1 unchanged)" in predraft()
        assert notes_on_the_chart(box, stay.patient) == 0


def test_the_schedule_drafts_ahead_without_being_asked(ward: Sandbox, tmp_path: Path) -> None:
    """The schedule the worker (and serve, with the in-process queue) runs: a round at once,
    its jobs run by the process; off while predraft_every_s is unset."""
    stay = in_progress(ward, "ahead-scheduled", hospitalization=GOING_HOME)
    with running_app(ward, tmp_path) as app:
        registration = ahead(app)
        drafts = app.state.drafts

        async def drafted() -> bool:
            found = await drafts.latest_for_stay(registration.issuer, stay.patient, stay.encounter)
            return found is not None

        async def scheduled() -> None:
            async with predraft_schedule(app.state):
                while not await drafted():
                    await asyncio.sleep(0.2)

        async def unscheduled() -> bool:
            async with predraft_schedule(app.state):
                await asyncio.sleep(2)
            return await drafted()

        assert app.settings.predraft_every_s is None
        assert app.call(unscheduled()) is False
        app.settings.predraft_every_s = 60
        app.call(asyncio.wait_for(scheduled(), 55))
        draft = drafts_of(app, registration, stay)
        job = app.call(app.state.jobs.get(draft.job_id))
        assert job.origin == "predraft"


def test_a_registration_may_ask_for_drafts_made_ahead_to_be_written_at_once(
    ward: Sandbox, tmp_path: Path
) -> None:
    stay = in_progress(ward, "ahead-written", hospitalization=GOING_HOME)
    with running_app(ward, tmp_path) as app:
        registration = ahead(app).model_copy(update={"predraft_writes": True})
        app.settings.registrations[0] = registration
        done = run_round(app, registration)
        assert done.outcomes[stay] == "queued"
        draft = drafts_of(app, registration, stay)
        written = app.call(app.state.drafts.write_back_of(draft.id))
        assert written is not None and written.status == "done"
        assert notes_on_the_chart(ward, stay.patient) == 1
