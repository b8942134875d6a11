"""The physician's whole path in a real headless Chromium: chart → launch → progress → review →
citation → edit → acknowledge → sign, and the EHR's copy final with its attester.

Playwright drives Debian's Chromium (``executable_path``); it never downloads a browser. The
review page's screenshots are kept under ``test-artifacts/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import httpx
import pytest

from launch.sandbox.run import Sandbox
from tests.conftest import ARTIFACTS
from tests.review_support import HOSTILE, ONE_FLAG
from tests.smart_support import RunningApp, inpatient_encounter

CHROMIUM = os.environ.get("PROVENOTE_CHROMIUM") or shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Debian chromium is not installed (launch/setup.sh installs it)",
)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI needs Debian chromium: launch/setup.sh installs it"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield browser
        browser.close()


def launch_in(page, sandbox: Sandbox, patient: str) -> None:
    with httpx.Client() as client:
        encounter = inpatient_encounter(client, sandbox, patient)
    page.goto(sandbox.chart_url)
    page.locator(f'form:has(input[name="encounter"][value="{encounter}"]) button.launch').click()


def test_a_physician_reviews_acknowledges_and_signs_in_the_browser(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 1600})
    launch_in(page, review_sandbox, ONE_FLAG)
    page.wait_for_selector("#job")
    assert page.locator("#stage").text_content()  # the job's progress is shown
    page.locator("#open-draft").click(timeout=120_000)

    page.wait_for_selector("#review")
    assert page.locator("#patient-banner").is_visible()
    flagged = page.locator("li.sentence.flagged")
    assert flagged.count() == 1
    assert "Incomplete medication" in flagged.locator(".reasons").text_content()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review-page.png"), full_page=True)

    citation = flagged.locator("details.citation").first
    citation.locator("summary").click()
    assert citation.locator(".where").is_visible()
    assert "MedicationRequest/" in citation.locator(".where").text_content()

    plain = page.locator("li.sentence:not(.flagged)").first
    sentence_id = plain.get_attribute("id")
    original = plain.locator(".text").text_content()
    plain.locator("details.edit summary").click()
    plain.locator("textarea").fill(f"{original} Reviewed with the patient.")
    plain.locator("button.save").click()
    edited = page.locator(f'li[id="{sentence_id}"]')
    edited.locator(".review-mark").wait_for()
    assert edited.locator(".review-mark").text_content() == "edited"
    assert "checker: supported" in edited.locator(".verdict").text_content()

    assert page.locator("#sign").is_disabled()
    page.locator("li.sentence.flagged button.accept").click()
    page.wait_for_selector("#all-reviewed")
    assert page.locator("#sign").is_enabled()
    page.locator("#sign").click()
    page.wait_for_selector("#signed")
    page.screenshot(path=str(ARTIFACTS / "review-page-signed.png"), full_page=True)
    assert page.locator("#status").text_content() == "final"
    history = page.locator("#history").text_content()
    assert "edit" in history and "accept" in history and "Reviewed with the patient." in history

    draft = page.url.rsplit("/", 1)[-1]
    remote = page.request.get(f"{app.base_url}/api/drafts/{draft}").json()["write_back"]["remote"]
    composition = httpx.get(
        f"{review_sandbox.fhir_base}/{remote}",
        headers={"x-admin-token": review_sandbox.admin_token},
    ).json()
    assert composition["status"] == "final"
    assert composition["attester"][0]["party"]["reference"] == review_sandbox.practitioner
    page.close()


def test_markup_in_a_note_never_runs_in_the_browser(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = chromium.new_page()
    launch_in(page, review_sandbox, HOSTILE)
    page.locator("#open-draft").click(timeout=120_000)
    page.wait_for_selector("#review")
    assert "<script>document.title='pwned'</script>" in page.locator("#review").text_content()
    assert page.title() != "pwned"
    assert page.evaluate("document.body.dataset.pwned") is None
    assert page.locator("#review img").count() == 0
    page.close()
