"""Running the Provenote app against the sandbox, and a browser that follows redirects."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import httpx

from launch.demo import inpatient_encounter as chart_inpatient_encounter
from launch.sandbox.clients import RegisteredClient
from launch.sandbox.cluster import Cluster
from launch.sandbox.run import Sandbox, app_client
from launch.sandbox.servers import ThreadedServer, free_port
from smartapp.app import create_app
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings
from smartapp.jobs.service import StageHook
from smartapp.state import AppState
from tests.attack_support import FakeEhr, RecordingServer, recording_server, seed_stay

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RunningApp:
    settings: Settings
    state: AppState

    @property
    def base_url(self) -> str:
        return self.settings.base_url

    def call(self, awaitable: Awaitable[T]) -> T:
        """Run a coroutine on the app's own event loop (its database connections live there)."""
        assert self.state.loop is not None
        return asyncio.run_coroutine_threadsafe(awaitable, self.state.loop).result(timeout=60)


@contextmanager
def running_app(
    sandbox: Sandbox,
    data_dir: Path,
    stage_hook: StageHook | None = None,
    extra_registrations: tuple[ClientRegistration, ...] = (),
    registration_update: dict[str, object] | None = None,
    **overrides: object,
) -> Iterator[RunningApp]:
    """The app on its own port, registered with the sandbox as configured (its registration
    changed by ``registration_update``; with any other EHRs given), charts pointing at it; over
    HTTPS, with the sandbox's certificate, when the sandbox runs over HTTPS."""
    port = free_port()
    scheme = "https" if sandbox.tls else "http"
    fields = {"base_url": f"{scheme}://127.0.0.1:{port}", "data_dir": data_dir} | overrides
    if sandbox.tls:
        fields["ca_bundle"] = sandbox.tls.cert_file
    settings = Settings(**fields)  # type: ignore[arg-type]
    if {"registrations", "allowed_issuers"} & overrides.keys():
        sandbox.register(app_client(settings, sandbox.fhir_base))
    else:
        settings = sandbox.configure(settings)
    if registration_update:
        changed = settings.registrations[0].model_copy(update=registration_update)
        settings.registrations[0] = changed
    if extra_registrations:
        registrations = [*settings.registrations, *extra_registrations]
        settings = settings.model_copy(update={"registrations": registrations})
    sandbox.app_launch_url = settings.launch_url
    app = create_app(settings, stage_hook)
    server = ThreadedServer(app, port, sandbox.tls)
    server.start()
    try:
        yield RunningApp(settings, app.state.provenote)
    finally:
        server.stop()


@contextmanager
def app_and_browser(
    sandbox: Sandbox,
    data_dir: Path,
    stage_hook: StageHook | None = None,
    *,
    follow_redirects: bool = True,
    extra_registrations: tuple[ClientRegistration, ...] = (),
    **overrides: object,
) -> Iterator[tuple[RunningApp, httpx.Client]]:
    """The app as ``running_app`` starts it, and a browser for it: one that follows redirects,
    unless the test steps through the hops itself."""
    with (
        running_app(sandbox, data_dir, stage_hook, extra_registrations, **overrides) as app,
        httpx.Client(follow_redirects=follow_redirects, timeout=60) as browser,
    ):
        yield app, browser


def app_and_stepping_browser(
    sandbox: Sandbox,
    data_dir: Path,
    extra_registrations: tuple[ClientRegistration, ...] = (),
    **overrides: object,
) -> AbstractContextManager[tuple[RunningApp, httpx.Client]]:
    """The app, and a browser that follows no redirect: the test steps through the hops."""
    return app_and_browser(
        sandbox,
        data_dir,
        follow_redirects=False,
        extra_registrations=extra_registrations,
        **overrides,
    )


class BesideAnotherEhr(NamedTuple):
    server: RecordingServer
    other: FakeEhr
    app: RunningApp
    browser: httpx.Client


@contextmanager
def beside_another_ehr(
    sandbox: Sandbox, data_dir: Path, registered_as: str, **overrides: object
) -> Iterator[BesideAnotherEhr]:
    """A second EHR, faked on a recording server and registered with the app (as
    ``registered_as``) beside the sandbox, and a browser that steps through the hops: the stage
    of every test of what one EHR's launch must never hand the other."""
    with recording_server() as server:
        other = FakeEhr(server)
        registration = ClientRegistration(issuer=other.base, client_id=registered_as)
        with app_and_stepping_browser(sandbox, data_dir, (registration,), **overrides) as (
            app,
            browser,
        ):
            yield BesideAnotherEhr(server, other, app, browser)


class DraftedStay(NamedTuple):
    app: RunningApp
    browser: httpx.Client
    encounter: str
    job: dict


@contextmanager
def drafted_stay(
    sandbox: Sandbox, data_dir: Path, patient: str, **overrides: object
) -> Iterator[DraftedStay]:
    """A patient of their own with one stay (``seed_stay``), the app registered as
    ``app-{patient}``, and the job that the physician's launch from the chart ran, finished."""
    encounter = seed_stay(sandbox, patient)
    with app_and_browser(sandbox, data_dir, client_id=f"app-{patient}", **overrides) as (
        app,
        browser,
    ):
        job = wait_for(browser, app, launch_job(browser, sandbox, patient, encounter=encounter))
        yield DraftedStay(app, browser, encounter, job)


def chart_launch(
    browser: httpx.Client, sandbox: Sandbox, patient: str, encounter: str
) -> httpx.Response:
    return browser.post(
        f"{sandbox.chart_url}/launch", data={"patient": patient, "encounter": encounter}
    )


def inpatient_encounter(browser: httpx.Client, sandbox: Sandbox, patient: str) -> str:
    """The most recent inpatient encounter the chart lists for ``patient``."""
    return chart_inpatient_encounter(browser.get(sandbox.chart_url).text, patient)


def registered(client_id: str, kind: str, redirect_uri: str, **extra: object) -> RegisteredClient:
    return RegisteredClient(client_id, kind, [redirect_uri], **extra)  # type: ignore[arg-type]


def launch_job(
    browser: httpx.Client,
    sandbox: Sandbox,
    patient: str,
    user: str | None = None,
    encounter: str | None = None,
) -> str:
    """Launch from the chart as a browser would (as ``user``, else the sandbox physician; for
    ``encounter``, else the latest inpatient stay); the id of the job the launch started."""
    encounter = encounter or inpatient_encounter(browser, sandbox, patient)
    form = {"patient": patient, "encounter": encounter} | ({"user": user} if user else {})
    landing = browser.post(f"{sandbox.chart_url}/launch", data=form)
    assert landing.status_code == 200, landing.text[:300]
    return landing.text.split('data-job="', 1)[1].split('"', 1)[0]


def json_answer(answer: httpx.Response) -> dict:
    """The answer's JSON; an answer that is not JSON (a balancer's 502 page) fails with its status
    and first bytes, so a load test says what it got instead of a bare JSONDecodeError."""
    try:
        return dict(answer.json())
    except ValueError:
        raise AssertionError(
            f"{answer.request.method} {answer.request.url.path}: HTTP {answer.status_code}, "
            f"not JSON: {answer.text[:120]!r}"
        ) from None


def wait_for(
    browser: httpx.Client, app: RunningApp | Cluster, job_id: str, timeout_s: float = 120
) -> dict:
    deadline = time.monotonic() + timeout_s
    job: dict = {}
    while time.monotonic() < deadline:
        job = json_answer(browser.get(f"{app.base_url}/jobs/{job_id}"))
        if job.get("state") in {"done", "failed"}:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {job}")
