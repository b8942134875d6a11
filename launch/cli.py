"""The ``provenote`` command line."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from fhir_mapping.evidence import build_evidence
from fhir_mapping.resources import EvidenceInputError
from pipeline.evidence import EncounterAttributes, EvidenceState, PatientInfoAttributes
from pipeline.rendering import render

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
    bundle: Annotated[
        Path | None,
        typer.Argument(help="FHIR R4 Bundle (or resource list) JSON. Default: a shipped sample."),
    ] = None,
    encounter: Annotated[
        str | None,
        typer.Option("--encounter", help="Encounter id. Default: the most recent inpatient stay."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the EvidenceState JSON here.")
    ] = None,
) -> None:
    """Build the evidence state of one stay and print an overview of it."""
    source = bundle or DEFAULT_SAMPLE
    if bundle is None:
        typer.echo(f"Using the shipped sample patient {source.name}", err=True)
    data = read_json(source)
    try:
        state = build_evidence(data, encounter)
    except EvidenceInputError as error:
        raise fail(f"{source}: {error}") from None
    if output is not None:
        write_atomically(output, state.model_dump_json(indent=2))
    typer.echo(overview(state), nl=False)
    if output is not None:
        typer.echo(f"Evidence state written to {output}")


if __name__ == "__main__":
    sys.exit(app())
