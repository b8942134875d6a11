"""A job worker's second draft against its first: the first pays for loading the FOCUS sentence
encoder (torch, transformers, all-MiniLM-L6-v2), the second must not.

One process runs the summarizing stage a job worker runs (``smartapp.jobs.drafting.Drafting``,
evidence-only, FOCUS scoring the stay's note) on two stays whose one note is a clinical text
(``bench.model_quality.note_stay``: an ACI-BENCH note, an MTS-Dialog dialogue; the Synthea stays'
notes are coded lines FOCUS never scores), then the first again; the encoder's load is timed in
a fresh process beside it. #39 asks that the second job of the same kind pay no model or
encoder load.

Run: ``python -m bench.second_job``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from bench.model_quality import note_stay, notes
from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from smartapp.jobs.drafting import Drafting
from smartapp.jobs.evidence import evidence_from_fhir

COLD_LOAD = (
    "import time\n"
    "started = time.perf_counter()\n"
    "from pipeline.summarizing.focus import default_salience\n"
    "default_salience()\n"
    "print(time.perf_counter() - started)\n"
)


async def _ignore(step: str) -> None:
    return None


def drafting_seconds(drafting: Drafting, state: EvidenceState) -> float:
    started = time.perf_counter()
    asyncio.run(drafting.summarize("bench", state, _ignore))
    return time.perf_counter() - started


def main() -> None:
    settings = PipelineSettings()
    chosen = notes(2)
    if len(chosen) < 2:
        raise SystemExit("needs two notes from ../shared/data (MTS-Dialog, ACI-BENCH)")
    (first_name, first_text), (second_name, second_text) = chosen
    first = evidence_from_fhir(note_stay(first_name, first_text), None, settings=settings)
    second = evidence_from_fhir(note_stay(second_name, second_text), None, settings=settings)
    cold = subprocess.run(
        [sys.executable, "-c", COLD_LOAD], capture_output=True, text=True, check=True
    )
    drafting = Drafting(settings)
    runs = [
        (f"first job ({first_name})", drafting_seconds(drafting, first)),
        (f"second job ({second_name})", drafting_seconds(drafting, second)),
        (f"third job ({first_name} again)", drafting_seconds(drafting, first)),
    ]
    print("Summarizing stage of a job worker, one process, evidence-only with FOCUS (seconds)")
    print(f"  the encoder's load alone, in a fresh process  {float(cold.stdout):.2f} s")
    baseline = runs[0][1]
    for label, seconds in runs:
        print(f"  {label:<34} {seconds:.2f} s  {seconds / baseline:.2f}x the first")


if __name__ == "__main__":
    main()
