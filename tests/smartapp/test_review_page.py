"""The physician's review page, sign-off and its safeguards, against the sandbox EHR."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
from sqlalchemy import select

from launch.sandbox.run import Sandbox
from smartapp.core.tables import AuditRow, DraftEditRow
from tests.review_support import (
    HOSTILE,
    MANY_FLAGS,
    ONE_FLAG,
    accept_all,
    flagged_ids,
    form_values,
    unflagged_ids,
)
from tests.smart_support import RunningApp, launch_job, running_app, wait_for


def open_draft(
    app: RunningApp, sandbox: Sandbox, patient: str = ONE_FLAG, user: str | None = None
) -> tuple[httpx.Client, str]:
    browser = httpx.Client(follow_redirects=True, timeout=60)
    job = wait_for(browser, app, launch_job(browser, sandbox, patient, user))
    assert job["state"] == "done", job
    return browser, job["draft"] or browser.get(f"{app.base_url}/jobs/{job['id']}").json()["draft"]


def ehr_copy(browser: httpx.Client, app: RunningApp, sandbox: Sandbox, draft: str) -> dict:
    """The EHR's copy of the draft, where the job wrote it back."""
    remote = browser.get(f"{app.base_url}/api/drafts/{draft}").json()["write_back"]["remote"]
    return httpx.get(
        f"{sandbox.fhir_base}/{remote}", headers={"x-admin-token": sandbox.admin_token}
    ).json()


def test_flags_come_first_with_their_reason_and_each_citation_opens_its_source(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox)
    page = browser.get(f"{app.base_url}/drafts/{draft}")
    assert page.status_code == 200
    text = page.text
    assert "Needs review (1 open)" in text
    assert text.index('id="needs-review"') < text.index('id="section-stay"')
    (flagged,) = flagged_ids(text)
    item = text.split(f'<li id="{flagged}"', 1)[1].split("</li>\n", 1)[0]
    assert '<span class="kind">Incomplete medication</span>' in item
    # The citation reads as what it is; the raw reference stays on it, and it opens the order.
    citation = re.search(r'<a class="citation"[^>]*href="([^"]+)"[^>]*>([^<]*)</a>', item)
    assert citation.group(2).startswith("[1] Order: ") and "MedicationRequest/" in item
    source = browser.get(f"{app.base_url}{citation.group(1)}")
    assert source.status_code == 200
    for field in ("Drug", "Status", "Ordered", "Prescriber"):
        assert f'<th scope="row">{field}</th>' in source.text, field
    assert "Reference: <code>MedicationRequest/" in source.text
    assert 'id="patient-banner"' in text and 'id="patient-name"' in text
    assert "--smart-color-highlight: #0b5cad;" in text  # the EHR's SMART style
    assert "script-src 'self'" in page.headers["content-security-policy"]


def test_edit_is_checked_again_and_kept_in_the_history(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    target = unflagged_ids(page)[0]
    before = page.split(f'<li id="{target}"', 1)[1].split('<p class="text">', 1)[1]
    before = before.split("</p>", 1)[0]
    answer = browser.post(
        f"{app.base_url}/drafts/{draft}/sentences/{target}",
        data=form_values(page) | {"action": "edit", "text": "Discharged on 999 mg of nothing."},
    )
    assert answer.status_code == 200
    assert target in flagged_ids(answer.text)  # the invented number fails the checker
    assert "Failed check" in answer.text.split(f'<li id="{target}"', 1)[1].split("</li>", 1)[0]
    assert "Needs review (2 open)" in answer.text
    edits = app.call(_edits(app, draft))
    assert [(e.action, e.after, e.verdict) for e in edits] == [
        ("edit", "Discharged on 999 mg of nothing.", "unsupported")
    ]
    assert edits[0].actor.endswith(review_sandbox.practitioner)
    assert edits[0].before is not None and edits[0].before.startswith(before[:20])
    api = browser.get(f"{app.base_url}/api/drafts/{draft}").json()
    assert "999 mg" in api["markdown"]

    deleted = browser.post(
        f"{app.base_url}/drafts/{draft}/sentences/{target}",
        data=form_values(answer.text) | {"action": "delete"},
    )
    assert deleted.status_code == 200 and f'<li id="{target}"' not in deleted.text
    assert "Needs review (1 open)" in deleted.text  # deleting an unsupported edit acknowledges it
    last = app.call(_edits(app, draft))[-1]
    assert (last.action, last.before, last.after) == (
        "delete",
        "Discharged on 999 mg of nothing.",
        None,
    )
    bundle = browser.get(f"{app.base_url}/api/drafts/{draft}").json()["bundle"]
    assert target not in str(bundle) and "999 mg" not in str(bundle)


async def _edits(app: RunningApp, draft: str) -> list[DraftEditRow]:
    async with app.state.database.sessions() as session:
        rows = await session.execute(select(DraftEditRow).where(DraftEditRow.draft_id == draft))
        return list(rows.scalars())


async def _audit(app: RunningApp, draft: str) -> list[str]:
    async with app.state.database.sessions() as session:
        rows = await session.execute(select(AuditRow.action).where(AuditRow.draft_id == draft))
        return list(rows.scalars())


def test_signing_waits_for_every_flag_then_makes_the_ehr_copy_final(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    refused = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(page))
    assert refused.status_code == 409 and "still need review" in refused.text
    assert ehr_copy(browser, app, review_sandbox, draft)["status"] == "preliminary"
    (flagged,) = flagged_ids(page)
    accepted = browser.post(
        f"{app.base_url}/drafts/{draft}/sentences/{flagged}",
        data=form_values(page) | {"action": "accept"},
    )
    assert "Needs review (0 open)" in accepted.text and not flagged_ids(accepted.text)
    preview = browser.post(
        f"{app.base_url}/drafts/{draft}/sign/preview", data=form_values(accepted.text)
    )
    written_to = preview.text.split('id="preview-written-to">', 1)[1].split("</dd>", 1)[0]
    remote = browser.get(f"{app.base_url}/api/drafts/{draft}").json()["write_back"]["remote"]
    assert written_to == f"the EHR&#39;s copy {remote}, replaced by the signed version"
    signed = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(accepted.text))
    assert signed.status_code == 200 and 'id="signed"' in signed.text
    # The signer by name, the time to the minute.
    signer = re.escape("Signed by Dr. Sandra Box (Practitioner/sandbox-physician) at ")
    minute = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\."
    assert re.search(signer + minute, signed.text), signed.text.split('id="signed"', 1)[1][:200]
    composition = ehr_copy(browser, app, review_sandbox, draft)
    assert composition["status"] == "final"
    assert composition["attester"][0]["mode"] == "legal"
    assert composition["attester"][0]["party"]["reference"] == review_sandbox.practitioner
    provenances = httpx.get(
        f"{review_sandbox.fhir_base}/Provenance",
        params={"target": f"Composition/{composition['id']}"},
        headers={"x-admin-token": review_sandbox.admin_token},
    ).json()["entry"]
    verifiers = [
        p["resource"]
        for p in provenances
        if p["resource"]["agent"][0]["type"]["coding"][0]["code"] == "verifier"
    ]
    assert [v["agent"][0]["who"]["reference"] for v in verifiers] == [review_sandbox.practitioner]
    assert "signed" in app.call(_audit(app, draft))
    again = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(accepted.text))
    assert again.status_code == 409  # a final draft cannot change


def test_sign_or_edit_without_the_csrf_token_is_refused(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    (flagged,) = flagged_ids(page)
    values = form_values(page)
    forged = {"revision": values["revision"], "action": "delete"}
    url = f"{app.base_url}/drafts/{draft}/sentences/{flagged}"
    assert browser.post(url, data=forged).status_code == 403
    assert flagged_ids(browser.get(f"{app.base_url}/drafts/{draft}").text) == [flagged]
    browser.post(
        f"{app.base_url}/drafts/{draft}/sentences/{flagged}", data=values | {"action": "accept"}
    )
    revision = str(int(values["revision"]) + 1)
    for data in ({"revision": revision}, {"revision": revision, "csrf_token": "0" * 64}):
        refused = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=data)
        assert refused.status_code == 403
    assert browser.get(f"{app.base_url}/api/drafts/{draft}").json()["status"] == "preliminary"


def test_a_user_of_another_launch_context_cannot_open_the_draft(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox)
    other, _ = open_draft(app, review_sandbox, HOSTILE, user="Practitioner/other-doctor")
    assert other.get(f"{app.base_url}/drafts/{draft}").status_code == 404
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    (flagged,) = flagged_ids(page)
    stolen = form_values(page) | {"action": "accept"}
    assert (
        other.post(f"{app.base_url}/drafts/{draft}/sentences/{flagged}", data=stolen).status_code
        == 404
    )


def test_a_user_who_is_not_a_practitioner_cannot_sign(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox, user=f"Patient/{ONE_FLAG}")
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    assert 'id="sign-refused"' in page
    # The costliest request there is, rendering a page image, is for reviewers only.
    pages = browser.get(f"{app.base_url}/drafts/{draft}/documents/any/pages/1")
    assert pages.status_code == 403
    assert 'class="actions"' not in page  # no review controls for a patient
    (flagged,) = flagged_ids(page)
    before = browser.get(f"{app.base_url}/api/drafts/{draft}").json()
    for action in ("accept", "delete"):
        refused = browser.post(
            f"{app.base_url}/drafts/{draft}/sentences/{flagged}",
            data=form_values(page) | {"action": action},
        )
        assert refused.status_code == 403 and "Only a practitioner can review" in refused.text
    refused = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(page))
    assert refused.status_code == 403 and "Only a practitioner can review" in refused.text
    after = browser.get(f"{app.base_url}/api/drafts/{draft}").json()
    assert after["status"] == "preliminary" and after["bundle"] == before["bundle"]


def test_the_second_of_two_concurrent_edits_gets_409_on_either_database(
    review_sandbox: Sandbox, tmp_path: Path, database_url: str | None
) -> None:
    with running_app(review_sandbox, tmp_path, database_url=database_url) as app:
        _second_edit_is_stale(app, review_sandbox)


def _second_edit_is_stale(app: RunningApp, review_sandbox: Sandbox) -> None:
    first, draft = open_draft(app, review_sandbox)
    second, _ = open_draft(app, review_sandbox)
    seen_first = first.get(f"{app.base_url}/drafts/{draft}").text
    seen_second = second.get(f"{app.base_url}/drafts/{draft}").text
    (flagged,) = flagged_ids(seen_first)
    url = f"{app.base_url}/drafts/{draft}/sentences/{flagged}"
    assert first.post(url, data=form_values(seen_first) | {"action": "accept"}).status_code == 200
    stale = second.post(
        url,
        data=form_values(seen_second) | {"action": "edit", "text": "Something else."},
        headers={"x-requested-with": "provenote-review"},
    )
    assert stale.status_code == 409
    assert "someone else changed this draft" in stale.text
    assert "<html" not in stale.text  # the page's script swaps this fragment in
    edits = app.call(_edits(app, draft))
    assert [e.action for e in edits] == ["accept"]
    current = first.get(f"{app.base_url}/drafts/{draft}").text
    signed = first.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(current))
    assert signed.status_code == 200
    assert first.get(f"{app.base_url}/api/drafts/{draft}").json()["status"] == "final"


def test_html_in_a_note_stays_inert_on_the_page_and_in_the_narrative(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    browser, draft = open_draft(app, review_sandbox, HOSTILE)
    page = browser.get(f"{app.base_url}/drafts/{draft}").text
    assert "&lt;script&gt;document.title=" in page
    assert "<script>document.title" not in page and "<img src=x" not in page
    bundle = browser.get(f"{app.base_url}/api/drafts/{draft}").json()["bundle"]
    composition = next(
        e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Composition"
    )
    narratives = " ".join(section["text"]["div"] for section in composition["section"])
    assert "&lt;script&gt;" in narratives
    assert "<script" not in narratives and "<img" not in narratives


def test_an_ehr_copy_changed_meanwhile_is_not_overwritten(
    app: RunningApp, review_sandbox: Sandbox
) -> None:
    # Its own patient: drafts of one stay share their EHR copy across these tests' databases.
    browser, draft = open_draft(app, review_sandbox, MANY_FLAGS)
    composition = ehr_copy(browser, app, review_sandbox, draft)
    touched = composition | {"title": f"{composition['title']} (edited in the EHR {uuid.uuid4()})"}
    httpx.put(
        f"{review_sandbox.fhir_base}/Composition/{composition['id']}",
        json=touched,
        headers={"x-admin-token": review_sandbox.admin_token},
    ).raise_for_status()
    page = accept_all(browser, app.base_url, draft)
    refused = browser.post(f"{app.base_url}/drafts/{draft}/sign", data=form_values(page))
    assert refused.status_code == 409 and "nothing was signed" in refused.text
    # The next step is offered: the EHR's version, read now, beside the draft.
    link = re.search(r'id="open-ehr-copy" href="([^"]+)"', refused.text)
    assert link is not None
    beside = browser.get(f"{app.base_url}{link.group(1)}")
    assert beside.status_code == 200 and "(edited in the EHR" in beside.text
    assert f"Composition/{composition['id']}" in beside.text
    assert ehr_copy(browser, app, review_sandbox, draft)["status"] == "preliminary"
    assert browser.get(f"{app.base_url}/api/drafts/{draft}").json()["status"] == "preliminary"
    assert "sign_failed" in app.call(_audit(app, draft))
