"""AURA's attention reading at scale, and what the agentic loop costs in model calls.

1. The hook reading the summary's rows (64 generated tokens) in every layer, against eager
   ``output_attentions=True``, on a Llama-shaped model with random weights, for contexts of 1k,
   4k and 16k tokens; each in a fresh process (``bench/focus_speed.py`` measures). Eager runs that
   would need more memory than the budget are skipped, and the table says so.
2. Model calls and prompt tokens per summary for the agentic loop against a single-pass draft,
   on the Synthea inpatient stays, with a tiny random Llama (the mechanics, not the quality).

Run: ``python -m bench.aura [--device cuda --hidden 4096 --heads 32 --kv-heads 8]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench.focus_speed import llama_shape, measure
from bench.synthea import SYNTHEA
from pipeline.settings import PipelineSettings

SUMMARY_TOKENS = 64


def attention_table(args: argparse.Namespace) -> None:
    config = llama_shape(args) | {"query_rows": SUMMARY_TOKENS, "all_layers": True}
    print(
        f"AURA rows ({SUMMARY_TOKENS} summary tokens, all {args.layers} layers) by hook vs "
        f"eager output_attentions=True ({args.device}, hidden {args.hidden}, {args.heads} heads)"
    )
    print(
        f"{'tokens':>7} {'eager s':>9} {'hook s':>9} {'time ratio':>11} {'eager MiB':>10} "
        f"{'hook MiB':>9} {'memory ratio':>13}"
    )
    budget = args.eager_budget_gib * 2**30
    for tokens in args.tokens:
        hook = measure("hook", tokens, config, args.device)
        eager_bytes = 2 * args.layers * args.heads * tokens * tokens * 4
        if eager_bytes > budget:
            print(
                f"{tokens:>7} {'skipped':>9} {hook['seconds']:>9.3f} {'':>11} "
                f"{'(>' + str(args.eager_budget_gib) + ' GiB)':>10} "
                f"{hook['peak_bytes'] / 2**20:>9.0f}"
            )
            continue
        eager = measure("eager", tokens, config, args.device)
        print(
            f"{tokens:>7} {eager['seconds']:>9.3f} {hook['seconds']:>9.3f} "
            f"{eager['seconds'] / hook['seconds']:>10.1f}x {eager['peak_bytes'] / 2**20:>10.0f} "
            f"{hook['peak_bytes'] / 2**20:>9.0f} "
            f"{eager['peak_bytes'] / max(hook['peak_bytes'], 1):>12.1f}x"
        )
    print()


class Counting:
    """Counts the calls and prompt tokens that reach a backend."""

    def __init__(self, backend, tokenizer) -> None:
        self.backend, self.tokenizer = backend, tokenizer
        self.name, self.version = backend.name, backend.version
        self.calls = 0
        self.tokens = 0

    def complete(self, messages, schema=None, max_tokens=None):
        self.calls += 1
        self.tokens += len(self.tokenizer(self.backend.chat_text(messages))["input_ids"])
        return self.backend.complete(messages, schema)


def calls_table() -> None:
    from launch.tiny_models import tiny_llama, word_tokenizer
    from pipeline.backends.chat import ask_json
    from pipeline.backends.llm import TransformersBackend
    from pipeline.summarizing.agentic import LoopSettings, agentic_summary
    from pipeline.summarizing.extraction import with_model_extraction
    from smartapp.jobs.evidence import evidence_from_fhir

    folder = SYNTHEA if SYNTHEA.is_dir() else Path(__file__).parents[1] / "launch" / "samples"
    loop_calls, loop_tokens, single_calls, single_tokens = [], [], [], []
    tokenizer = word_tokenizer("")
    model = tiny_llama(len(tokenizer))
    for path in sorted(folder.glob("*-*-*-*-*.json")):
        data = json.loads(path.read_bytes())
        if not any(
            e["resource"].get("class", {}).get("code") == "IMP"
            for e in data["entry"]
            if e["resource"]["resourceType"] == "Encounter"
        ):
            continue
        state = evidence_from_fhir(data, settings=PipelineSettings())
        counting = Counting(TransformersBackend(model, tokenizer, max_new_tokens=16), tokenizer)
        extended = with_model_extraction(state, counting)
        agentic_summary(
            extended,
            counting,
            settings=LoopSettings(max_iterations=3, top_k=1),
            salience=lambda text: ([], []),
        )
        loop_calls.append(counting.calls)
        loop_tokens.append(counting.tokens)
        single = Counting(TransformersBackend(model, tokenizer, max_new_tokens=16), tokenizer)
        ask_json(
            single,
            [{"role": "user", "content": "TASK: draft"}],
            ["sentences"],
            0,
            {
                "type": "object",
                "properties": {
                    "sentences": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"text": {"type": "string"}}},
                    }
                },
            },
        )
        single_calls.append(single.calls)
        single_tokens.append(single.tokens)
    print(f"Agentic loop vs single-pass draft, {len(loop_calls)} inpatient stays, tiny Llama")
    print(
        f"  model calls per summary: median {statistics.median(loop_calls):.0f} "
        f"(single pass: {statistics.median(single_calls):.0f})"
    )
    print(f"  prompt tokens per summary: median {statistics.median(loop_tokens):.0f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--eager-budget-gib", type=int, default=12)
    args = parser.parse_args()
    attention_table(args)
    calls_table()


if __name__ == "__main__":
    main()
