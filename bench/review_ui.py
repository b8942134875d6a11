"""The review workspace in Debian's Chromium: the keystrokes a physician needs, the page's
weight, its time to interactive against the landing page, and the time of one review action
against the partial update the page used before (the whole review re-rendered and replaced).

For each of the 15 Synthea patients (../shared/data/synthea/california; the shipped samples
when that is absent) the latest inpatient stay is launched from the chart and a scripted
physician resolves every flag with the keyboard alone: ``a`` on a focused flag, ``j`` when the
focus is elsewhere, then ``s`` and ``Enter`` to sign. Each keystroke counts.

Time to interactive is the Navigation Timing ``domContentLoadedEventEnd`` (the page parsed and
its script run), median of five loads of each page, reported as review / landing. One action:
accepting a sentence, from the keystroke until the page shows the new count (the workspace:
the sentence and the counts replaced), against the same accept posted as the old script did
and the whole review fragment put in place; both timed inside the page, on the same draft.

Run: ``python -m bench.review_ui``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.synthea import SYNTHEA
from launch.demo import DemoError, charted_patients, inpatient_encounter
from launch.sandbox.run import SAMPLES, Sandbox
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.settings import Settings

CHROMIUM = os.environ.get("PROVENOTE_CHROMIUM") or shutil.which("chromium")
LOADS = 5
OLD_ACTIONS = 4

# The review page's partial update as it was: POST, then the whole review replaced; both ways
# are timed until the frame after the change has been laid out and painted.
OLD_UPDATE = """async ([url, body]) => {
  const started = performance.now();
  const answer = await fetch(url, {method: "POST", body: new URLSearchParams(body),
    headers: {"X-Requested-With": "provenote-review"}, credentials: "same-origin"});
  const html = await answer.text();
  document.getElementById("review").innerHTML = html;
  await new Promise((painted) => requestAnimationFrame(() => setTimeout(painted)));
  return [performance.now() - started, html.length];
}"""
WATCH_PROGRESS = """() => {
  window.benchDone = null;
  const before = document.getElementById("progress").textContent;
  document.addEventListener("keydown", () => { window.benchStart = performance.now(); },
    {capture: true, once: true});
  const watcher = new MutationObserver(() => {
    const now = document.getElementById("progress");
    if (now && now.textContent !== before) {
      watcher.disconnect();
      requestAnimationFrame(() => setTimeout(() => { window.benchDone = performance.now(); }));
    }
  });
  watcher.observe(document.getElementById("review"), {subtree: true, childList: true});
}"""
LAST_ANSWER_SIZE = (
    "performance.getEntriesByType('resource').filter(e => e.initiatorType === 'fetch')"
    ".pop().decodedBodySize"
)
INTERACTIVE = "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"


def latest_stays(chart: str) -> list[tuple[str, str]]:
    """Each charted patient's latest inpatient encounter (a patient without one is left out)."""
    found = []
    for patient in charted_patients(chart):
        try:
            found.append((patient, inpatient_encounter(chart, patient)))
        except DemoError:
            continue
    return found


def _interactive(page: Any, url: str) -> float:
    times = []
    for _ in range(LOADS):
        page.goto(url)
        times.append(page.evaluate(INTERACTIVE))
    return statistics.median(times)


def _resolve_with_keys(page: Any) -> tuple[int, int, list[float], list[int]]:
    """Every open flag resolved from the keyboard: (flags, keystrokes, ms and bytes per
    accept)."""
    flags = page.locator(".sentence[data-open-flag]").count()
    keys, timings, sizes = 0, [], []
    while page.locator(".sentence[data-open-flag]").count():
        on_flag = page.evaluate(
            "document.activeElement && document.activeElement.hasAttribute('data-open-flag')"
        )
        if not on_flag:
            page.keyboard.press("j")
            keys += 1
            continue
        page.evaluate(WATCH_PROGRESS)
        page.keyboard.press("a")
        keys += 1
        page.wait_for_function("() => window.benchDone !== null")
        timings.append(page.evaluate("window.benchDone - window.benchStart"))
        sizes.append(page.evaluate(LAST_ANSWER_SIZE))
    return flags, keys, timings, sizes


def _sign_with_keys(page: Any) -> int:
    page.keyboard.press("s")
    page.locator("#confirm-sign").wait_for()
    page.keyboard.press("Enter")
    page.wait_for_selector("#signature")
    return 2


def _old_updates(page: Any, base_url: str) -> tuple[list[float], list[int]]:
    """Accepts posted and applied as the old script did, on sentences nobody flagged."""
    timings, sizes = [], []
    for _ in range(OLD_ACTIONS):
        form = page.locator(".sentence:not([data-open-flag]) form:has(button.delete)").first
        url = form.get_attribute("action")
        values = {
            "csrf_token": form.locator('input[name="csrf_token"]').get_attribute("value"),
            "revision": form.locator('input[name="revision"]').get_attribute("value"),
            "action": "accept",
        }
        elapsed, size = page.evaluate(OLD_UPDATE, [f"{base_url}{url}", values])
        timings.append(elapsed)
        sizes.append(size)
    return timings, sizes


def _weight(page: Any, base_url: str) -> int:
    html = len(page.content().encode("utf-8"))
    static = sum(
        len(httpx.get(f"{base_url}/static/{name}").content) for name in ("review.js", "review.css")
    )
    return html + static


def main() -> None:
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        print("Review UI: skipped, Debian chromium is not installed (launch/setup.sh)\n")
        return
    seeds = [SYNTHEA] if SYNTHEA.is_dir() else [SAMPLES]
    port = free_port()
    rows = []
    patients = 0
    new_ms: list[float] = []
    old_ms: list[float] = []
    old_sizes: list[int] = []
    new_sizes: list[int] = []
    review_tti: list[float] = []
    landing_tti: list[float] = []
    with (
        tempfile.TemporaryDirectory() as data_dir,
        Sandbox(app_launch_url=f"http://127.0.0.1:{port}/launch", seed_paths=seeds) as sandbox,
        sync_playwright() as playwright,
    ):
        settings = sandbox.configure(
            Settings(base_url=f"http://127.0.0.1:{port}", data_dir=Path(data_dir))
        )
        server = ThreadedServer(create_app(settings), port)
        server.start()
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            chart = httpx.get(sandbox.chart_url, timeout=300).text
            patients = len(charted_patients(chart))
            for patient, encounter in latest_stays(chart):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(sandbox.chart_url)
                launch = f'form:has(input[name="encounter"][value="{encounter}"]) button.launch'
                page.locator(launch).click()
                page.locator("#open-draft").wait_for(timeout=300_000)
                landing_tti.append(_interactive(page, page.url))
                page.locator("#open-draft").click()
                page.wait_for_selector("#review")
                review_url = page.url
                review_tti.append(_interactive(page, review_url))
                weight = _weight(page, settings.base_url)
                flags, keys, timings, sizes = _resolve_with_keys(page)
                new_ms += timings
                new_sizes += sizes
                old, sizes = _old_updates(page, settings.base_url)
                old_ms += old
                old_sizes += sizes
                page.goto(review_url)
                sign_keys = _sign_with_keys(page)
                rows.append((patient, flags, keys, sign_keys, weight))
                page.close()
        finally:
            browser.close()
            server.stop()
    _report(rows, (new_ms, new_sizes), (old_ms, old_sizes), review_tti, landing_tti)
    print(
        f"  {len(rows)} of the {patients} patients have an inpatient stay (Provenote drafts for "
        "inpatient stays only)\n"
    )


def _report(
    rows: list[tuple[str, int, int, int, int]],
    new: tuple[list[float], list[int]],
    old: tuple[list[float], list[int]],
    review_tti: list[float],
    landing_tti: list[float],
) -> None:
    print(f"Review workspace, keyboard only: {len(rows)} Synthea inpatient stays")
    print("  patient                               flags  keys  keys/flag  sign keys  page KB")
    for patient, flags, keys, sign_keys, weight in rows:
        per_flag = f"{keys / flags:.2f}" if flags else "-"
        print(
            f"  {patient:<38}{flags:>5}{keys:>6}{per_flag:>11}{sign_keys:>11}{weight / 1024:>9.1f}"
        )
    flags = sum(row[1] for row in rows)
    keys = sum(row[2] for row in rows)
    print(
        f"  total: {flags} flags, {keys} keystrokes ({keys / max(flags, 1):.2f} per flag, goal "
        f"<= 2), {max(row[3] for row in rows)} to sign (goal <= 5); page weight median "
        f"{statistics.median(row[4] for row in rows) / 1024:.1f} KB"
    )
    review, landing = statistics.median(review_tti), statistics.median(landing_tti)
    print(
        f"  time to interactive: review {review:.1f} ms, landing {landing:.1f} ms; "
        f"review / landing = {review / landing:.2f}"
    )
    if new[0] and old[0]:
        new_ms, old_ms = statistics.median(new[0]), statistics.median(old[0])
        print(
            f"  one accept, keystroke to painted page: workspace {new_ms:.1f} ms "
            f"({statistics.median(new[1]) / 1024:.1f} KB: the sentence and the counts), "
            f"whole-review update {old_ms:.1f} ms ({statistics.median(old[1]) / 1024:.1f} KB); "
            f"old / new = {old_ms / new_ms:.2f}"
        )


if __name__ == "__main__":
    main()
