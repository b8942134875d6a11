"""Time per model-drafted summary: per-sentence model calls in parallel against one at a time.

The agentic loop's independent calls (entailment per sentence, one fix per flagged sentence) run
up to ``model_concurrency`` at once. Against the same OpenAI-compatible server (the sandbox's
scripted one, answering each request after ``--latency`` seconds as a model server would) the
same stay (every note sentence kept: r = 1) is drafted with concurrency 1 (sequential, the
baseline) and with 2, 4 and 8; the ratios are baseline time over concurrent time, measured in
one run. Every run makes the same model calls and writes the same summary, which is checked.

Run: ``python -m bench.model_concurrency [--latency S] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from launch.sandbox.model_server import ModelScript, model_server
from pipeline.settings import PipelineSettings
from pipeline.summarizing.agentic import LoopSettings, draft_with_model
from smartapp.core.openai_backend import OpenAIBackend
from smartapp.jobs.evidence import evidence_from_fhir

SAMPLE = (
    Path(__file__).resolve().parents[1]
    / "launch"
    / "samples"
    / "97da660e-b895-3740-a6fc-f8cb48dcf20c.json"
)
CONCURRENCY = (1, 2, 4, 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    state = evidence_from_fhir(
        json.loads(SAMPLE.read_text(encoding="utf-8")), settings=PipelineSettings()
    )
    timings: dict[int, list[float]] = {}
    outcomes: dict[int, tuple[int, list[str]]] = {}
    with model_server(ModelScript(delay_s=args.latency)) as (url, _):
        backend = OpenAIBackend(url, "sandbox-model")
        for concurrency in CONCURRENCY:
            settings = LoopSettings(concurrency=concurrency, ratio=1.0)
            for _ in range(args.repeats):
                started = time.perf_counter()
                _, summary = draft_with_model(state, backend, settings=settings)
                timings.setdefault(concurrency, []).append(time.perf_counter() - started)
                assert summary.model_usage is not None
                course = [s.text for s in summary.section("hospital_course").sentences]
                outcomes[concurrency] = (summary.model_usage.calls, course)
    baseline = statistics.median(timings[1])
    calls, course = outcomes[1]
    print(
        f"Model concurrency: one stay, {calls} model calls per summary, {len(course)} course "
        f"sentences, {args.latency:.2f} s per answer, median of {args.repeats}"
    )
    print(f"{'concurrency':>11}  {'s/summary':>9}  {'speed-up':>8}")
    for concurrency in CONCURRENCY:
        assert outcomes[concurrency] == (calls, course), "a concurrent run drafted differently"
        median = statistics.median(timings[concurrency])
        print(f"{concurrency:>11}  {median:>9.2f}  {baseline / median:>7.2f}×")


if __name__ == "__main__":
    main()
