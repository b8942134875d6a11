"""The commands that run something until stopped or done: the sandbox EHR, the demo, the app, the
worker, and drafting ahead."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from launch.cli.common import app, current_settings, fail, require_current_schema, server_settings


@app.command()
def sandbox(
    seed: Annotated[
        list[Path] | None,
        typer.Option("--seed", help="Bundle files or folders to load. Default: the samples."),
    ] = None,
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="Chart and authorization over HTTPS on localhost, with a certificate made for "
            "the run: frame an app on https://127.0.0.1 as a web EHR does (?framed=true).",
        ),
    ] = False,
) -> None:
    """Start the sandbox EHR (FHIR server, SMART authorization server, chart) until stopped."""
    from launch.sandbox.run import Sandbox
    from launch.sandbox.servers import SandboxError

    settings = current_settings()
    box = Sandbox(app_launch_url=settings.launch_url, seed_paths=seed or None, tls=tls)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        box.start()
    except SandboxError as error:
        box.stop()
        raise fail(str(error)) from None
    try:
        registration = box.configure(settings).registrations[0]
        listed = registration.model_dump(mode="json", exclude_none=True)
        if registration.client_secret is not None:
            listed["client_secret"] = registration.client_secret.get_secret_value()
        typer.echo(f"FHIR base: {box.fhir_base}")
        typer.echo(f"Chart: {box.chart_url}")
        if box.tls is not None:
            typer.echo(f"Framed chart: {box.chart_url}?framed=true")
            # The app must trust the run's certificate to reach the authorization server.
            typer.echo(f"PROVENOTE_CA_BUNDLE={box.tls.cert_file}")
            typer.echo(f"--ssl-certfile {box.tls.cert_file} --ssl-keyfile {box.tls.key_file}")
        # What `provenote serve` needs to accept launches from this sandbox (default deny).
        typer.echo(f"PROVENOTE_REGISTRATIONS='{json.dumps([listed])}'")
        typer.echo(f"Loaded {len(box.report.patients)} patients; stop with Ctrl-C", err=True)
        stop.wait()
    finally:
        box.stop()


@app.command()
def demo(
    keep_running: Annotated[
        bool, typer.Option("--keep-running", help="Leave the sandbox and the app up afterwards.")
    ] = False,
    data_dir: Annotated[Path, typer.Option(help="Where the demo app keeps its data.")] = Path(
        "data/demo"
    ),
    llm: Annotated[
        str,
        typer.Option(
            help="Who writes the hospital course: evidence-only (the default) or a summarizer "
            "such as smollm2 (the packaged SmolLM2: real language, not clinical quality)."
        ),
    ] = "evidence-only",
    discharge: Annotated[
        bool,
        typer.Option(
            "--discharge",
            help="Show the card flow: Start discharge calls the CDS hook, which drafts ahead; "
            "the card's link then opens the draft waiting.",
        ),
    ] = False,
) -> None:
    """Launch Provenote from the sandbox chart and show the draft it writes back."""
    from launch.demo import DemoError, run_demo
    from launch.sandbox.servers import SandboxError

    try:
        code = run_demo(data_dir, keep_running, llm, discharge)
    except (DemoError, SandboxError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    ssl_certfile: Annotated[
        Path | None, typer.Option(help="Serve HTTPS with this certificate (PEM).")
    ] = None,
    ssl_keyfile: Annotated[Path | None, typer.Option(help="The certificate's key (PEM).")] = None,
) -> None:
    """Run the Provenote app (SMART launch at /launch) with the PROVENOTE_* settings."""
    from launch.serving import serve as serve_app
    from smartapp.app import create_app
    from smartapp.core.logs import configure_logging

    settings = server_settings()
    require_current_schema(settings)
    configure_logging(settings.log_format == "json", settings.log_level, settings.log_ehr_bodies)
    serve_app(
        create_app(settings),
        host,
        port,
        settings.shutdown_grace_s,
        ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
        ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
    )


@app.command()
def predraft(
    issuer: Annotated[
        str | None,
        typer.Option(
            help="Draft ahead on this EHR (FHIR base) only. Default: every EHR "
            'registered with "predraft": true.'
        ),
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            help="With the in-process queue, run the queued drafts here and wait up "
            "to this many seconds for them (0: only queue them for `provenote serve`)."
        ),
    ] = 600.0,
) -> None:
    """Draft ahead the in-progress inpatient stays whose discharge is in sight, as Provenote
    itself (SMART Backend Services): once per stay, again only when its record changed."""
    import asyncio

    from pipeline.errors import ProvenoteError
    from smartapp.worker import run_predraft

    settings = server_settings()
    require_current_schema(settings)
    try:
        rounds = asyncio.run(run_predraft(settings, issuer, wait))
    except ProvenoteError as error:
        raise fail(str(error)) from error
    for done in rounds:
        counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(done.counts().items()))
        typer.echo(f"{done.issuer}: {len(done.outcomes)} stays in sight ({counts or 'none'})")


@app.command()
def worker(
    name: Annotated[
        str | None, typer.Option(help="Worker name in the queue (default host:pid).")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve this worker's Prometheus metrics on this port.")
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(help="Interface the metrics listen on (widen with care: 0.0.0.0)."),
    ] = "127.0.0.1",
) -> None:
    """Run drafting jobs from the queue until stopped (scale-out mode: PROVENOTE_JOB_QUEUE=
    procrastinate, PostgreSQL); start as many as the load needs, beside `provenote serve`."""
    import asyncio

    from pipeline.errors import ProvenoteError
    from smartapp.core.logs import configure_logging
    from smartapp.core.metrics import serve_worker_metrics
    from smartapp.worker import run_worker

    settings = server_settings()
    require_current_schema(settings)
    configure_logging(settings.log_format == "json", settings.log_level, settings.log_ehr_bodies)
    if metrics_port is not None:
        serve_worker_metrics(metrics_port, metrics_host)
    try:
        asyncio.run(run_worker(settings, name))
    except ProvenoteError as error:
        raise fail(str(error)) from error
