"""The commands that read a record or a text and draft or check: evidence, summarize, focus,
verify."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from launch.cli.common import (
    BundleArgument,
    EncounterOption,
    OutputOption,
    app,
    current_settings,
    fail,
    load_evidence,
    read_text,
    write_atomically,
)

if TYPE_CHECKING:
    from pipeline.checking.model_judge import ModelJudge
    from pipeline.evidence.model import EvidenceState


class SummaryFormat(StrEnum):
    bundle = "bundle"
    markdown = "markdown"


def overview(state: EvidenceState) -> str:
    from pipeline.evidence.model import EncounterAttributes, PatientInfoAttributes
    from pipeline.text.rendering import render

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


@app.command()
def evidence(
    bundle: BundleArgument = None,
    encounter: EncounterOption = None,
    output: OutputOption = None,
) -> None:
    """Build the evidence state of one stay and print an overview of it."""
    state = load_evidence(bundle, encounter, current_settings())
    if output is not None:
        write_atomically(output, state.model_dump_json(indent=2))
    typer.echo(overview(state), nl=False)
    if output is not None:
        typer.echo(f"Evidence state written to {output}")


@app.command()
def summarize(
    bundle: BundleArgument = None,
    encounter: EncounterOption = None,
    output: OutputOption = None,
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
    from fhir_mapping.composition import draft_bundle
    from fhir_mapping.json_values import as_json
    from pipeline.errors import ModelError
    from pipeline.summarizing.evidence_summary import summarize_evidence
    from pipeline.summarizing.summary_text import render_markdown
    from smartapp.core.language_models import language_model

    settings = current_settings()
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


def _model_judge(spec: str) -> ModelJudge:
    """The judge of ``--judge-model``: the model's verdicts, the shipped verifier's as fallback."""
    from pipeline.backends.claim_judge import default_judge
    from smartapp.core.language_models import judging_model

    try:
        return judging_model(current_settings(), spec, default_judge())
    except ValueError as error:
        raise fail(f"--judge-model: {error}") from None


@app.command()
def verify(
    source: Annotated[Path, typer.Option("--source", help="The source text (UTF-8).")],
    summary: Annotated[Path, typer.Option("--summary", help="The summary to check (UTF-8).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    words_only: Annotated[
        bool, typer.Option("--words-only", help="Skip the claim verifier: word checks only.")
    ] = False,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="A language model that judges each claim instead of the trained verifier "
            "(smollm2 | transformers:DIR | openai:URL#MODEL); the verifier answers where the "
            "model gives no usable verdict.",
        ),
    ] = None,
) -> None:
    """Check a free-text summary against a free-text source, by the word checks and the trained
    claim verifier (or a language model); exit 1 if any sentence is unsupported."""
    from pipeline.checking.verify import verify_text

    judge = None if words_only or judge_model is None else _model_judge(judge_model)
    report = verify_text(read_text(source), read_text(summary), judge=judge, meaning=not words_only)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for sentence in report.sentences:
            reasons = [
                check.detail if check.check == "entailment" else "; ".join(check.spans)
                for check in sentence.checks
                if not check.passed
            ]
            said = f"  <- {' | '.join(reasons)}" if reasons else ""
            typer.echo(f"{sentence.verdict.upper():<12} {sentence.text}{said}")
        typer.echo(
            f"numeric precision {report.numeric_precision:.3f}, "
            f"numeric hallucination rate {report.hallucination_rate:.3f}"
        )
    if any(sentence.verdict == "unsupported" for sentence in report.sentences):
        raise typer.Exit(1)
