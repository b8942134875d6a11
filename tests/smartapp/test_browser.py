"""The physician's review in a real headless Chromium: chart → launch → progress → review with
the keyboard alone → each kind of source beside the draft → sign, and the EHR's copy final.

Playwright drives Debian's Chromium (``executable_path``); it never downloads a browser. axe-core
runs from the local file its Python package ships. Screenshots at 1280 and 480 pixels wide are
kept under ``test-artifacts/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from launch.sandbox.run import Sandbox
from tests.browser_support import BROWSER_MARKS, CHROMIUM
from tests.conftest import ARTIFACTS
from tests.review_support import HOSTILE, ONE_FLAG, PDF_PATIENT
from tests.smart_support import RunningApp, inpatient_encounter

pytestmark = BROWSER_MARKS
GRAVE = {"serious", "critical"}


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


def open_review(chromium, sandbox: Sandbox, patient: str, width: int = 1280):
    """A new page, launched from the chart for ``patient``, on its draft's review."""
    page = chromium.new_page(viewport={"width": width, "height": 900})
    launch_in(page, sandbox, patient)
    page.wait_for_selector("#job")
    page.locator("#open-draft").click(timeout=120_000)
    page.wait_for_selector("#review")
    # The review's script runs once the page has loaded (it focuses the first flag): wait for it,
    # or a loaded machine asserts on a page whose script has not run yet.
    page.wait_for_load_state("load")
    return page


def grave_violations(page) -> list[str]:
    """What axe-core (WCAG 2.1 A and AA rules) finds of serious or critical impact."""
    from axe_playwright_python.sync_playwright import Axe

    tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
    options = {"runOnly": {"type": "tag", "values": tags}, "resultTypes": ["violations"]}
    results = Axe().run(page, options=options)
    return [
        f"{violation['id']}: {[node['target'] for node in violation['nodes']]}"
        for violation in results.response["violations"]
        if violation["impact"] in GRAVE
    ]


def unfold(node) -> None:
    """Open the section (collapsed unless it holds a flag) that a sentence or citation is in;
    Needs review is never collapsed."""
    node.evaluate(
        "node => { const section = node.closest('details'); if (section) section.open = true; }"
    )


def focused_id(page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.id")


def test_a_physician_resolves_every_flag_and_signs_with_the_keyboard_alone(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = open_review(chromium, review_sandbox, ONE_FLAG)
    assert page.locator("#patient-banner").is_visible()
    assert page.locator("#progress").text_content() == "0 of 1 flags resolved"
    flagged = page.locator("li.sentence.flagged")
    assert flagged.count() == 1
    # The page opens on the first flag, its actions shown; other sentences' actions are not.
    assert focused_id(page) == flagged.get_attribute("id")
    assert flagged.locator("button.accept").is_visible()
    assert not page.locator("li.sentence:not(.flagged) button.delete").first.is_visible()
    assert "Incomplete medication" in flagged.locator(".reasons").text_content()
    citation = flagged.locator("a.citation").first
    assert re.match(r"\[1\] Order: .+ \(\w[\w-]*\)$", citation.text_content())
    assert citation.get_attribute("title").startswith("MedicationRequest/")
    assert page.locator("#shortcuts").text_content().count("next / previous flag") == 1
    assert grave_violations(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review-1280.png"))

    # o: the flag's order opens beside the draft, readable, with its raw reference.
    page.keyboard.press("o")
    pane = page.locator("#source-pane")
    pane.locator("table.resource").wait_for()
    assert pane.locator('th:text-is("Drug")').count() == 1
    assert "MedicationRequest/" in pane.locator(".raw-ref").text_content()
    page.screenshot(path=str(ARTIFACTS / "review-1280-source.png"))

    # e: the edit opens; the checker answers as one types, with the changes against the draft.
    page.keyboard.press("e")
    assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
    page.keyboard.press("Control+End")
    page.keyboard.type(" Dose 999 mg.")
    verdict = flagged.locator(".live-check")
    verdict.filter(has_text="Checker: unsupported").wait_for()
    assert flagged.locator(".diff ins").text_content().endswith("999 mg.")
    page.keyboard.press("Escape")  # nothing saved
    assert focused_id(page) == flagged.get_attribute("id")

    # a: accepted as written, one keystroke; the progress moves and focus goes on to signing.
    page.keyboard.press("a")
    page.wait_for_selector("#all-reviewed")
    assert page.locator("#progress").text_content() == "1 of 1 flags resolved"
    assert focused_id(page) == "sign"

    # s, then Enter: what will be written is shown first, then it is signed.
    page.keyboard.press("s")
    dialog = page.locator("#sign-dialog")
    dialog.locator("#confirm-sign").wait_for()
    assert dialog.locator("#preview-status").text_content().startswith("final")
    assert review_sandbox.practitioner in dialog.locator("#preview-attester").text_content()
    assert "signed by" in dialog.locator("#note-preview").text_content()
    assert focused_id(page) == "confirm-sign"
    assert grave_violations(page) == []
    page.keyboard.press("Enter")
    page.wait_for_selector("#signature")
    assert page.locator("#status").text_content() == "final"
    assert page.locator(".actions, #sign, textarea").count() == 0  # read-only
    assert review_sandbox.practitioner in page.locator("#signature").text_content()
    page.screenshot(path=str(ARTIFACTS / "review-1280-signed.png"))

    draft = page.url.split("#", 1)[0].rsplit("/", 1)[-1]
    remote = page.request.get(f"{app.base_url}/api/drafts/{draft}").json()["write_back"]["remote"]
    composition = httpx.get(
        f"{review_sandbox.fhir_base}/{remote}",
        headers={"x-admin-token": review_sandbox.admin_token},
    ).json()
    assert composition["status"] == "final"
    assert composition["attester"][0]["party"]["reference"] == review_sandbox.practitioner
    page.close()


def test_an_edit_is_saved_from_the_keyboard_and_its_note_opens_beside_it(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = open_review(chromium, review_sandbox, ONE_FLAG)
    quoted = page.locator(
        "li.sentence:not(.flagged):has(a.citation[data-raw^='DocumentReference/'])"
    )
    sentence = quoted.first
    sentence_id = sentence.get_attribute("id")
    unfold(sentence)
    sentence.focus()
    page.keyboard.press("o")
    pane = page.locator("#source-pane")
    pane.locator("mark#quote").wait_for()
    label = sentence.locator("a.citation").first.text_content()
    assert re.search(r", \d{4}-\d{2}-\d{2}, p\. 1$", label)  # "Title, date, p. 1"
    quote = pane.locator("mark#quote").text_content()
    assert quote and quote in pane.locator("pre.page-text").text_content()

    page.keyboard.press("e")
    page.keyboard.press("Control+End")
    page.keyboard.type(" Reviewed with the patient.")
    sentence.locator(".live-check").filter(has_text="Checker: supported").wait_for()
    page.keyboard.press("Control+Enter")
    edited = page.locator(f'li[id="{sentence_id}"] .review-mark')
    edited.wait_for()
    assert edited.text_content() == "edited"
    assert (
        "Reviewed with the patient." in page.locator(f'li[id="{sentence_id}"] .text').text_content()
    )
    # The other forms took the new revision: accepting the flag now is not refused as stale.
    page.locator("li.sentence.flagged").focus()
    page.keyboard.press("a")
    page.wait_for_selector("#all-reviewed")
    assert page.locator("#message").count() == 0
    page.close()


def test_a_pdf_page_and_a_scanned_page_open_with_the_quote_marked(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = open_review(chromium, review_sandbox, PDF_PATIENT)
    pane = page.locator("#source-pane")
    for label, scanned in (("Outside hospital record, ", False), ("Scanned consult, ", True)):
        link = page.locator("a.citation", has_text=label).first
        unfold(link)
        link.click()
        pane.locator(f"#source-title:has-text('{label}')").wait_for()
        image = pane.locator("img#page-image")
        image.wait_for()
        page.wait_for_function("() => document.getElementById('page-image').naturalWidth > 0")
        boxes = pane.locator(".mark-box")
        assert boxes.count() >= 1
        # The marked region lies on the page image, where the quote is.
        frame = pane.locator(".page-frame").bounding_box()
        box = boxes.first.bounding_box()
        assert frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"]
        assert ("read by OCR" in pane.locator(".where").text_content()) is scanned
        assert pane.locator("mark#quote").text_content()
    assert grave_violations(page) == []
    page.close()


def test_in_a_narrow_frame_the_page_is_one_column_and_the_source_opens_under_the_sentence(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = open_review(chromium, review_sandbox, ONE_FLAG, width=480)
    assert page.evaluate("document.documentElement.scrollWidth") <= 480
    assert not page.locator("#source-pane").is_visible()
    page.screenshot(path=str(ARTIFACTS / "review-480.png"))
    flagged = page.locator("li.sentence.flagged")
    flagged.locator("a.citation").first.click()
    flagged.locator(".source-slot table.resource").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 480
    assert grave_violations(page) == []
    page.close()


def test_markup_in_a_note_never_runs_in_the_browser(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    page = open_review(chromium, review_sandbox, HOSTILE)
    assert "<script>document.title='pwned'</script>" in page.locator("#review").text_content()
    hostile = page.locator("li.sentence:has-text('pwned') a.citation").first
    unfold(hostile)
    hostile.click()
    page.locator("#source-pane mark#quote").wait_for()
    assert "<img src=x" in page.locator("#source-pane").text_content()
    assert page.title() != "pwned"
    assert page.evaluate("document.body.dataset.pwned") is None
    assert page.locator("#review img").count() == 0
    page.close()


def test_a_discharge_card_launches_straight_into_the_draft_waiting(
    chromium, app: RunningApp, review_sandbox: Sandbox
) -> None:
    """Start discharge in the chart: the hook's card says the draft is being made; once made,
    the card says so with its flags, and its link opens the draft's review at once."""
    with httpx.Client() as client:
        encounter = inpatient_encounter(client, review_sandbox, ONE_FLAG)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})

    def start_discharge() -> None:
        page.goto(review_sandbox.chart_url)
        stay = f'form:has(input[name="encounter"][value="{encounter}"]) button.discharge'
        page.locator(stay).click()
        page.wait_for_selector("section.card")

    start_discharge()
    assert page.locator("section.card .summary").text_content() == "Drafting the discharge summary"
    issuer = app.settings.registrations[0].issuer
    job = app.call(app.state.jobs.latest_for(issuer, ONE_FLAG, encounter))
    assert job is not None
    deadline = time.monotonic() + 120
    while (draft := app.call(app.state.drafts.of_job(job.id))) is None:
        assert time.monotonic() < deadline, "the hook's draft was never made"
        time.sleep(0.3)

    start_discharge()
    card = page.locator("section.card")
    assert card.locator(".summary").text_content() == (
        "Discharge summary draft ready: 1 flag to review"
    )
    assert card.get_attribute("data-indicator") == "warning"  # an incomplete medication
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "discharge-card.png"))
    card.locator("button.card-link").click()
    page.wait_for_selector("#review")
    assert page.url.endswith(f"/drafts/{draft.id}")
    assert page.locator("li.sentence.flagged").count() == 1
    page.close()
