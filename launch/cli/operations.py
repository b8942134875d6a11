"""The operator's commands: migrate the schema, purge what is due, check the configuration,
export the physicians' edits."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from launch.cli.common import (
    app,
    checked_settings,
    configuration_report,
    current_settings,
    fail,
    server_settings,
    write_atomically,
)


@app.command()
def migrate() -> None:
    """Bring the database schema to this version's (what serve and worker do as they start,
    unless PROVENOTE_MIGRATE_ON_START=false), and say at which revision it is."""
    import asyncio

    from smartapp.core.db import Database
    from smartapp.jobs.factory import job_queue
    from smartapp.jobs.queue import ProcrastinateQueue

    settings = server_settings(serving=False)

    async def upgraded() -> tuple[str | None, str | None]:
        database = Database(settings.database_dsn)
        try:
            await database.migrate()
            return await database.revisions()
        finally:
            await database.dispose()

    async def queue_installed(queue: ProcrastinateQueue) -> bool:
        async with queue.opened():
            return await queue.installed_schema()

    found, _ = asyncio.run(upgraded())
    typer.echo(f"database schema at revision {found}")
    queue = job_queue(settings)
    if isinstance(queue, ProcrastinateQueue):
        installed = asyncio.run(queue_installed(queue))
        typer.echo(f"job queue tables {'installed' if installed else 'present'} (procrastinate)")


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

    settings = server_settings(serving=False)

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
        raise fail(configuration_report(problems))
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

    settings = current_settings()

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
