"""The ``provenote`` command line.

It starts fast: ``--help`` and ``evidence`` import neither torch, transformers, Litestar nor nltk;
the commands that need them import them when they run.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from collections import Counter
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fhir_mapping.composition import draft_bundle
from fhir_mapping.json_values import as_json
from fhir_mapping.resources import EvidenceInputError
from pipeline.errors import ModelError
from pipeline.evidence.model import EncounterAttributes, EvidenceState, PatientInfoAttributes
from pipeline.summarizing.summary_text import render_markdown
from pipeline.text.rendering import render
from smartapp.core.settings import ConfigurationError, Settings, get_settings
from smartapp.jobs.evidence import evidence_from_fhir

if TYPE_CHECKING:
    pass

SAMPLES = Path(__file__).parent / "samples"
DEFAULT_SAMPLE = SAMPLES / "97da660e-b895-3740-a6fc-f8cb48dcf20c.json"
INPUT_ERROR = 2

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Provenote: discharge summary drafts in which every statement shows where it came from.",
)


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(INPUT_ERROR)


def checked_settings() -> tuple[Settings | None, list[str]]:
    """The settings, and every reason they cannot work: unknown PROVENOTE_* variables, values
    that cannot work, and what cannot work across processes (smartapp.core.deployment)."""
    from smartapp.core.deployment import deployment_problems

    try:
        settings = get_settings(strict=True)
    except ConfigurationError as error:
        return None, [str(error)]
    return settings, deployment_problems(settings)


def server_settings() -> Settings:
    """The settings a server starts with: a configuration that cannot work stops it at once,
    with a short paragraph per problem, never a traceback."""
    settings, problems = checked_settings()
    if settings is None or problems:
        raise fail("the configuration cannot work:\n- " + "\n- ".join(problems))
    return settings


def require_current_schema(settings: Settings) -> None:
    """Where a server may not migrate (PROVENOTE_MIGRATE_ON_START=false), a schema that is not
    this version's stops it before it starts, in one sentence."""
    import asyncio

    from smartapp.core.db import Database
    from smartapp.core.schema import SchemaNotCurrentError

    async def prepared() -> None:
        database = Database(settings.database_dsn)
        try:
            await database.prepare(migrate=False)
        finally:
            await database.dispose()

    if not settings.migrate_on_start:
        try:
            asyncio.run(prepared())
        except SchemaNotCurrentError as error:
            raise fail(str(error)) from None


class SummaryFormat(StrEnum):
    bundle = "bundle"
    markdown = "markdown"


BundleArgument = Annotated[
    Path | None,
    typer.Argument(help="FHIR R4 Bundle (or resource list) JSON. Default: a shipped sample."),
]
EncounterOption = Annotated[
    str | None,
    typer.Option("--encounter", help="Encounter id. Default: the most recent inpatient stay."),
]


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise fail(f"{path}: no such file") from None
    except (IsADirectoryError, UnicodeDecodeError) as error:
        raise fail(f"{path}: not a UTF-8 text file: {error}") from None


def load_evidence(bundle: Path | None, encounter: str | None, settings: Settings) -> EvidenceState:
    source = bundle or DEFAULT_SAMPLE
    if bundle is None:
        typer.echo(f"Using the shipped sample patient {source.name}", err=True)
    data = read_json(source)
    try:
        return evidence_from_fhir(data, encounter, settings=settings)
    except EvidenceInputError as error:
        raise fail(f"{source}: {error}") from None


def read_json(path: Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise fail(f"{path}: no such file") from None
    except IsADirectoryError:
        raise fail(f"{path}: is a directory, not a JSON file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise fail(f"{path}: not valid JSON: {error}") from None


def write_atomically(path: Path, text: str) -> None:
    """Write the whole file or nothing: a reader never sees half an output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def overview(state: EvidenceState) -> str:
    patient = next(
        (
            f.attributes
            for f in state.facts["patient_info"]
            if isinstance(f.attributes, PatientInfoAttributes)
        ),
        PatientInfoAttributes(),
    )
    stay = next(
        (
            f.attributes
            for f in state.facts["encounter"]
            if isinstance(f.attributes, EncounterAttributes) and f.attributes.kind == "stay"
        ),
        None,
    )
    pages = [page for document in state.documents for page in document.pages]
    flags = Counter(flag.code for flag in state.flags_for_review)
    return render(
        "cli/evidence_overview.txt.j2",
        state=state,
        patient=patient,
        stay=stay,
        pages_total=len(pages),
        pages_read=sum(page.has_text for page in pages),
        pages_ocr=sum(page.ocr_applied for page in pages),
        flag_counts=sorted(flags.items()),
    )


@app.callback()
def main() -> None:
    """Provenote command line."""


@app.command()
def evidence(
    bundle: BundleArgument = None,
    encounter: EncounterOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the EvidenceState JSON here.")
    ] = None,
) -> None:
    """Build the evidence state of one stay and print an overview of it."""
    state = load_evidence(bundle, encounter, get_settings())
    if output is not None:
        write_atomically(output, state.model_dump_json(indent=2))
    typer.echo(overview(state), nl=False)
    if output is not None:
        typer.echo(f"Evidence state written to {output}")


@app.command()
def summarize(
    bundle: BundleArgument = None,
    encounter: EncounterOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the result here, not stdout.")
    ] = None,
    output_format: Annotated[
        SummaryFormat,
        typer.Option("--format", help="bundle: a FHIR transaction Bundle; markdown: for people."),
    ] = SummaryFormat.bundle,
    llm: Annotated[
        str | None,
        typer.Option(
            help="evidence-only | smollm2 | transformers:DIR|FILE.gguf | openai:URL#MODEL (the "
            "hospital course). "
            "Default: PROVENOTE_SUMMARIZER."
        ),
    ] = None,
    scorer: Annotated[
        Path | None,
        typer.Option(help="A local causal LM directory that scores grounding (AURA) for openai."),
    ] = None,
) -> None:
    """Draft the discharge summary of one stay (evidence-only unless a model is configured)."""
    from pipeline.summarizing.evidence_summary import summarize_evidence
    from smartapp.core.language_models import language_model

    settings = get_settings()
    if scorer is not None:
        settings = settings.model_copy(update={"aura_scorer": scorer})
    try:
        model = language_model(settings, "evidence-only" if llm == "none" else llm)
    except ValueError as error:
        raise fail(f"--llm: {error}") from None
    state = load_evidence(bundle, encounter, settings)
    if model is None:
        summary = summarize_evidence(state, ratio=settings.focus_ratio, settings=settings)
    else:
        try:
            state, summary = model.draft(state, settings)
        except ModelError as error:
            typer.echo(f"error: the language model failed: {error}", err=True)
            raise typer.Exit(1) from None
    if output_format is SummaryFormat.markdown:
        text = render_markdown(summary, state)
    else:
        text = json.dumps(as_json(draft_bundle(summary, state, datetime.now(UTC))), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    write_atomically(output, text)
    flagged = sum(sentence.flagged for sentence in summary.sentences())
    typer.echo(
        f"Draft written to {output}: {len(summary.sentences())} sentences, {flagged} flagged",
        err=True,
    )


@app.command("focus")
def focus_command(
    file: Annotated[Path, typer.Argument(help="A note as UTF-8 text.")],
    ratio: Annotated[float, typer.Option("--ratio", min=0.01, max=1.0)] = 0.5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Keep the most salient sentences of a note (FOCUS), with offsets and scores."""
    from pipeline.summarizing.focus import candidates_of as focus_candidates
    from pipeline.summarizing.focus import default_salience, focus, word_budget, word_count

    text = read_text(file)
    candidates = focus_candidates(text)
    kept = focus(text, ratio, default_salience(), candidates)
    if as_json:
        payload = {
            "ratio": ratio,
            "sentences": len(candidates),
            "kept": [
                {
                    "index": s.index,
                    "start": s.start,
                    "end": s.end,
                    "score": round(s.score, 6),
                    "protected": s.protected,
                    "text": s.text,
                }
                for s in kept
            ],
        }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    typer.echo(
        f"Kept {len(kept)} of {len(candidates)} sentences (a budget of "
        f"{word_budget(ratio, sum(word_count(c.text) for c in candidates))} words; protected "
        "sentences are always kept)"
    )
    for sentence in kept:
        marker = " protected" if sentence.protected else ""
        typer.echo(
            f"[{sentence.start}:{sentence.end}] {sentence.score:+.4f}{marker}  {sentence.text}"
        )


@app.command()
def verify(
    source: Annotated[Path, typer.Option("--source", help="The source text (UTF-8).")],
    summary: Annotated[Path, typer.Option("--summary", help="The summary to check (UTF-8).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check a free-text summary against a free-text source; exit 1 if any sentence is flagged."""
    from pipeline.checking.verify import verify_text

    report = verify_text(read_text(source), read_text(summary))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for sentence in report.sentences:
            spans = f"  <- {'; '.join(sentence.spans)}" if sentence.spans else ""
            typer.echo(f"{sentence.verdict.upper():<12} {sentence.text}{spans}")
        typer.echo(
            f"numeric precision {report.numeric_precision:.3f}, "
            f"numeric hallucination rate {report.hallucination_rate:.3f}"
        )
    if any(sentence.verdict == "unsupported" for sentence in report.sentences):
        raise typer.Exit(1)


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
    from launch.sandbox.run import Sandbox, SandboxError

    settings = get_settings()
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
    from launch.sandbox.run import SandboxError

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
def migrate() -> None:
    """Bring the database schema to this version's (what serve and worker do as they start,
    unless PROVENOTE_MIGRATE_ON_START=false), and say at which revision it is."""
    import asyncio

    from smartapp.core.db import Database

    settings = server_settings()

    async def upgraded() -> tuple[str | None, str | None]:
        database = Database(settings.database_dsn)
        try:
            await database.migrate()
            return await database.revisions()
        finally:
            await database.dispose()

    found, _ = asyncio.run(upgraded())
    typer.echo(f"database schema at revision {found}")


@app.command()
def purge(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what is due, remove nothing.")
    ] = False,
) -> None:
    """Remove the pulled FHIR records that are due (a signed draft's, or older than
    PROVENOTE_RECORD_RETENTION_DAYS), each with an audit event; for a daily schedule."""
    import asyncio
    from datetime import timedelta

    from smartapp.core.db import Database
    from smartapp.drafts.service import DraftService
    from smartapp.jobs.repository import JobRepository
    from smartapp.jobs.retention import Purged, purge_records

    settings = server_settings()

    async def purged() -> list[Purged]:
        database = Database(settings.database_dsn)
        try:
            await database.prepare(settings.migrate_on_start)
            jobs = JobRepository(database, timedelta(seconds=settings.job_lease_s), "purge")
            return await purge_records(
                jobs,
                DraftService(database),
                settings.record_retention_days,
                datetime.now(UTC),
                dry_run=dry_run,
            )
        finally:
            await database.dispose()

    removed = asyncio.run(purged())
    for item in removed:
        typer.echo(f"job {item.job_id}: {item.reason}")
    verb = "due" if dry_run else "removed"
    typer.echo(f"{len(removed)} pulled records {verb}", err=True)


@app.command("check-config")
def check_config() -> None:
    """Check the PROVENOTE_* configuration as `serve` and `worker` will, without starting them:
    exit 0 when it can work, else 2 with each problem."""
    settings, problems = checked_settings()
    if settings is None or problems:
        raise fail("the configuration cannot work:\n- " + "\n- ".join(problems))
    layout = (
        "procrastinate on PostgreSQL" if settings.job_queue == "procrastinate" else "in-process"
    )
    typer.echo(
        f"configuration OK: {len(settings.all_registrations())} EHR registrations, "
        f"{layout} jobs, summarizer {settings.summarizer}"
    )


@app.command("export-edits")
def export_edits(
    output: Annotated[Path, typer.Option("--output", "-o", help="JSON Lines file to write.")],
    since: Annotated[
        datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Only edits made on or after this date (UTC)."),
    ] = None,
    with_identifiers: Annotated[
        bool,
        typer.Option(
            "--with-identifiers",
            help="Keep the patients' names, dates of birth and record numbers (left out by "
            "default, so the file can leave the clinical systems).",
        ),
    ] = False,
) -> None:
    """Write every physician edit as a JSON line: draft, section, sentence before and after,
    cited evidence, checker verdicts, when, and a pseudonymous editor id."""
    import asyncio

    from smartapp.core.db import Database
    from smartapp.core.keys import pseudonym_secret
    from smartapp.drafts.edits_export import edit_records

    settings = get_settings()

    async def collect() -> list[str]:
        database = Database(settings.database_dsn)
        try:
            await database.migrate()
            start = since.replace(tzinfo=UTC) if since is not None else None
            records = edit_records(
                database, pseudonym_secret(settings), start, with_identifiers=with_identifiers
            )
            return [json.dumps(record, ensure_ascii=False) async for record in records]
        finally:
            await database.dispose()

    lines = asyncio.run(collect())
    write_atomically(output, "".join(f"{line}\n" for line in lines))
    typer.echo(f"{len(lines)} edits written to {output}", err=True)


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


if __name__ == "__main__":
    sys.exit(app())
