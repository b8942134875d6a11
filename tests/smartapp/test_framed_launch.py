"""The app inside the chart's frame, over HTTPS, in a real Chromium: the chart on ``localhost``
frames the app on ``127.0.0.1`` (two sites), and the launch, the review and the signature all
happen inside the frame, on cookies that are SameSite=None, Secure and Partitioned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.sandbox.run import Sandbox
from tests.attack_support import seed_stay
from tests.browser_support import BROWSER_MARKS, CHROMIUM
from tests.smart_support import running_app

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def https_sandbox() -> Iterator[Sandbox]:
    with Sandbox(app_launch_url="https://127.0.0.1:1/launch", tls=True) as box:
        yield box


def test_launch_review_and_sign_inside_the_ehrs_frame_over_https(
    https_sandbox: Sandbox, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    patient = "framed-patient"
    encounter = seed_stay(https_sandbox, patient)
    with (
        running_app(https_sandbox, tmp_path, client_id="app-framed") as app,
        sync_playwright() as playwright,
    ):
        assert app.base_url.startswith("https://127.0.0.1:")
        assert https_sandbox.chart_url.startswith("https://localhost:")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            # The sandbox's certificate is made for this run; the browser is told to trust it.
            context = browser.new_context(ignore_https_errors=True)
            page = context.new_page()
            page.goto(f"{https_sandbox.chart_url}?framed=true")
            row = page.locator(f'form:has(input[name="encounter"][value="{encounter}"])')
            row.locator("button.launch").click()
            frame = page.frame_locator("#app-frame")
            frame.locator("#job").wait_for(timeout=60_000)
            frame.locator("#open-draft").click(timeout=120_000)
            frame.locator("#review").wait_for()
            for _ in range(40):  # accept each flag with the keyboard, inside the frame
                if frame.locator("#sign:not([disabled])").count():
                    break
                frame.locator("#review").press("j")
                frame.locator("#review").press("a")
                page.wait_for_timeout(300)
            frame.locator("#sign").click()
            frame.locator("#confirm-sign").click()
            frame.locator("#signature").wait_for(timeout=60_000)
            assert frame.locator("#status").text_content() == "final"
            cookies = {cookie["name"]: cookie for cookie in context.cookies(app.base_url)}
            session = cookies["__Host-provenote_session"]
            assert session["sameSite"] == "None" and session["secure"]
            # Partitioned under the chart's site, set from inside a cross-site frame (CHIPS).
            assert session["partitionKey"] == "https://localhost"
            assert session["httpOnly"] and session["path"] == "/"
        finally:
            browser.close()
