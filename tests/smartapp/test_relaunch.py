"""One AI note per stay: a relaunch opens the stay's draft, "Draft again" replaces it (here and
in the EHR's copy), and nothing ever replaces or joins a signed summary. Against the sandbox's
real FHIR server, counting what it holds."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from launch.sandbox.run import Sandbox
from tests.review_support import accept_all, form_values
from tests.smart_support import RunningApp, drafted_stay, wait_for


def notes_of(sandbox: Sandbox, patient: str) -> list[dict]:
    """The Compositions the EHR holds for ``patient``."""
    found = httpx.get(
        f"{sandbox.fhir_base}/Composition",
        params={"patient": f"Patient/{patient}"},
        headers={"x-admin-token": sandbox.admin_token},
    ).json()
    return [entry["resource"] for entry in found.get("entry", [])]


def relaunch(browser: httpx.Client, sandbox: Sandbox, patient: str, encounter: str) -> str:
    """Launch again from the chart; the page the browser ends on."""
    landing = browser.post(
        f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
    )
    assert landing.status_code == 200, landing.text[:300]
    return str(landing.url)


def closed_form(browser: httpx.Client, app: RunningApp) -> dict[str, str]:
    """A form for a draft whose page has none (superseded, signed): the session's CSRF token,
    from the landing page's sign-out form, and a revision."""
    landing = browser.get(f"{app.base_url}/").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', landing)
    assert csrf is not None
    return {"csrf_token": csrf.group(1), "revision": "1"}


def draft_again(browser: httpx.Client, app: RunningApp, draft: str) -> dict:
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    asked = browser.post(f"{app.base_url}/drafts/{draft}/redraft", data=form_values(page))
    assert asked.status_code == 200 and 'data-job="' in asked.text, asked.text[:300]
    job_id = asked.text.split('data-job="', 1)[1].split('"', 1)[0]
    return wait_for(browser, app, job_id)


def test_a_relaunch_opens_the_draft_and_draft_again_replaces_it_in_place(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    patient = "relaunch-one-note"
    with drafted_stay(sandbox, tmp_path, patient) as (app, browser, encounter, first):
        assert first["state"] == "done", first
        (written,) = notes_of(sandbox, patient)
        accept_all(browser, app.base_url, first["draft"])  # review work to come back to
        revision = browser.get(f"{app.base_url}/api/drafts/{first['draft']}").json()

        # Relaunch: the same draft, its review as left, nothing drafted or written.
        landed = relaunch(browser, sandbox, patient, encounter)
        assert landed == f"{app.base_url}/drafts/{first['draft']}"
        assert browser.get(f"{app.base_url}/api/drafts/{first['draft']}").json() == revision
        assert notes_of(sandbox, patient) == [written]
        latest = app.call(app.state.jobs.latest_for(sandbox.fhir_base, patient, encounter))
        assert latest is not None and latest.id == first["id"]  # no new job

        # Draft again: version 2 replaces version 1, here and in the EHR's one copy.
        second = draft_again(browser, app, first["draft"])
        assert second["state"] == "done" and second["draft"] != first["draft"], second
        (replaced,) = notes_of(sandbox, patient)
        assert replaced["id"] == written["id"]
        assert replaced["meta"]["versionId"] != written["meta"]["versionId"]
        assert replaced["status"] == "preliminary"
        assert replaced["identifier"] != written["identifier"]
        older = browser.get(f"{app.base_url}/api/drafts/{first['draft']}").json()
        newer = browser.get(f"{app.base_url}/api/drafts/{second['draft']}").json()
        assert older["status"] == "superseded" and newer["version"] == 2
        assert newer["write_back"]["remote"] == f"Composition/{written['id']}"
        old_page = browser.get(f"{app.base_url}/drafts/{first['draft']}").text
        assert 'id="superseded"' in old_page and 'id="redraft"' not in old_page
        refused = browser.post(
            f"{app.base_url}/drafts/{first['draft']}/sign", data=closed_form(browser, app)
        )
        assert refused.status_code == 409


def test_a_relaunch_after_signing_shows_the_signed_summary_and_writes_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    patient = "relaunch-signed"
    with drafted_stay(sandbox, tmp_path, patient) as (app, browser, encounter, job):
        page = accept_all(browser, app.base_url, job["draft"])
        signed = browser.post(f"{app.base_url}/drafts/{job['draft']}/sign", data=form_values(page))
        assert signed.status_code == 200 and 'id="signed"' in signed.text
        (final,) = notes_of(sandbox, patient)
        assert final["status"] == "final"

        landed = relaunch(browser, sandbox, patient, encounter)
        assert landed == f"{app.base_url}/drafts/{job['draft']}"
        shown = browser.get(landed).text
        assert 'id="signature"' in shown and 'id="redraft"' not in shown
        assert notes_of(sandbox, patient) == [final]
        refused = browser.post(
            f"{app.base_url}/drafts/{job['draft']}/redraft", data=closed_form(browser, app)
        )
        assert refused.status_code == 409
        assert notes_of(sandbox, patient) == [final]


def _compared(app: RunningApp, draft: str, until: bool) -> bool | None:
    """What the relaunch found, as kept on the draft (so every process says the same), once it
    says ``until`` (the question is asked beside the opened draft)."""
    deadline = time.monotonic() + 60
    while True:
        found = app.call(app.state.drafts.get(draft))
        assert found is not None
        if found.record_changed is until or time.monotonic() > deadline:
            return found.record_changed
        time.sleep(0.1)


def test_a_relaunch_offers_a_fresh_draft_only_when_the_record_changed(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    patient = "relaunch-changed"
    with drafted_stay(sandbox, tmp_path, patient) as (app, browser, encounter, job):
        before = sandbox.fhir_requests()
        relaunch(browser, sandbox, patient, encounter)
        assert _compared(app, job["draft"], until=False) is False
        # Discovery, the signer's name and one count-only batch: never the stay pulled again.
        assert sandbox.fhir_requests() - before <= 3
        assert (
            'id="record-changed"' not in browser.get(f"{app.base_url}/drafts/{job['draft']}").text
        )

        condition = {
            "resourceType": "Condition",
            "id": f"{patient}-new-finding",
            "clinicalStatus": {"coding": [{"code": "active"}]},
            "verificationStatus": {"coding": [{"code": "confirmed"}]},
            "code": {"text": "Acute kidney injury"},
            "subject": {"reference": f"Patient/{patient}"},
            "encounter": {"reference": f"Encounter/{encounter}"},
            "onsetDateTime": "2024-03-02T10:00:00Z",
        }
        httpx.put(
            f"{sandbox.fhir_base}/Condition/{condition['id']}",
            json=condition,
            headers={"x-admin-token": sandbox.admin_token},
        ).raise_for_status()
        relaunch(browser, sandbox, patient, encounter)
        assert _compared(app, job["draft"], until=True) is True
        page = browser.get(f"{app.base_url}/drafts/{job['draft']}").text
        assert 'id="record-changed"' in page and "Draft again from the record" in page
