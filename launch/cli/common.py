"""What every ``provenote`` command shares: the Typer app, the errors it exits with, reading the
inputs and the settings, and writing outputs whole.

Nothing heavy at import, here or in any command module: the FHIR models, the pipeline, the
settings and the app load inside the command that needs them, so ``provenote --help`` starts
at once (bench/startup.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pipeline.evidence.model import EvidenceState
    from smartapp.core.settings import Settings

SAMPLES = Path(__file__).parents[1] / "samples"
DEFAULT_SAMPLE = SAMPLES / "97da660e-b895-3740-a6fc-f8cb48dcf20c.json"
INPUT_ERROR = 2

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # Plain help: rich's help formatting costs more than the rest of --help together.
    rich_markup_mode=None,
    help="Provenote: discharge summary drafts in which every statement shows where it came from.",
)


@app.callback()
def main() -> None:
    """Provenote command line."""


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(INPUT_ERROR)


def checked_settings(*, serving: bool = True) -> tuple[Settings | None, list[str]]:
    """The settings, and every reason they cannot work: unknown PROVENOTE_* variables, values
    that cannot work (both at once), then everything the configuration needs before a server
    starts (smartapp.core.configuration_check). ``serving``: the command answers launches."""
    from smartapp.core.configuration_check import configuration_problems
    from smartapp.core.settings import ConfigurationError, get_settings, unknown_variables

    unknown = unknown_variables(os.environ)
    try:
        settings = get_settings()
    except ConfigurationError as error:
        return None, [*unknown, str(error)]
    return settings, [*unknown, *configuration_problems(settings, serving=serving)]


def current_settings() -> Settings:
    """The PROVENOTE_* settings, read once per process."""
    from smartapp.core.settings import get_settings

    return get_settings()


def server_settings(*, serving: bool = True) -> Settings:
    """The settings a server starts with: a configuration that cannot work stops it at once,
    with a short paragraph per problem, never a traceback."""
    settings, problems = checked_settings(serving=serving)
    if settings is None or problems:
        raise fail(configuration_report(problems))
    return settings


def configuration_report(problems: list[str]) -> str:
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    return f"the configuration cannot work ({count}):\n\n" + "\n\n".join(
        f"- {problem}" for problem in problems
    )


def require_current_schema(settings: Settings) -> None:
    """Where a server may not migrate (PROVENOTE_MIGRATE_ON_START=false), a schema that is not
    this version's stops it before it starts, in one sentence."""
    import asyncio

    from smartapp.core.db import Database
    from smartapp.core.schema import SchemaNotCurrentError
    from smartapp.jobs.factory import job_queue
    from smartapp.jobs.queue import ProcrastinateQueue

    async def prepared() -> None:
        database = Database(settings.database_dsn)
        try:
            await database.prepare(migrate=False)
        finally:
            await database.dispose()

    async def queue_present(queue: ProcrastinateQueue) -> bool:
        async with queue.opened():
            return await queue.schema_present()

    if not settings.migrate_on_start:
        try:
            asyncio.run(prepared())
        except SchemaNotCurrentError as error:
            raise fail(str(error)) from None
        queue = job_queue(settings)
        if isinstance(queue, ProcrastinateQueue) and not asyncio.run(queue_present(queue)):
            raise fail("the job queue's tables are not installed: run `provenote migrate` first")


BundleArgument = Annotated[
    Path | None,
    typer.Argument(help="FHIR R4 Bundle (or resource list) JSON. Default: a shipped sample."),
]
EncounterOption = Annotated[
    str | None,
    typer.Option("--encounter", help="Encounter id. Default: the most recent inpatient stay."),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="The file to write the result to.")
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
    from fhir_mapping.resources import EvidenceInputError
    from smartapp.jobs.evidence import evidence_from_fhir

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
