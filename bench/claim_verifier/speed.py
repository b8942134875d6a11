"""The claim verifier's cost per claim as it judges (adapters folded into their layers, pairs
read in order of length, a few at a time) against two baselines, in one run: the same folded
weights reading the pairs in the order asked, 32 at a time (how it judged before), and the
adapters apart (as they were trained).

    python -m bench.claim_verifier.speed [--rounds N]

The three judge the same 40 MTS-Dialog validation pairs (a reference's sentence against its
whole dialogue, the longest evidence the checker gives), in turn, A B C A B C …, so that a drift
of the machine's speed falls on each; it prints each one's median milliseconds per claim, the
median of the round-by-round ratios, and the largest difference between their answers.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Callable, Sequence

import torch

from bench.checker_quality import VALIDATION as MTS_VALIDATION
from pipeline.backends.claim_judge import (
    ClaimJudge,
    JudgeConfig,
    Judgement,
    base_model,
    encode_pairs,
    shipped_weights,
)

ASKED_ORDER_BATCH = 32


def adapters_apart() -> ClaimJudge:
    """The shipped verifier as training left it: each adapter beside its frozen layer."""
    from safetensors.torch import load_file

    weights = shipped_weights()
    config = JudgeConfig.model_validate_json((weights / "config.json").read_text())
    tokenizer, model = base_model(config)
    model.load_state_dict(load_file(str(weights / "adapter.safetensors")), strict=False)
    return ClaimJudge(tokenizer, model, config)


@torch.inference_mode()
def in_order_asked(judge: ClaimJudge, pairs: list[tuple[str, str]]) -> list[Judgement]:
    """The verifier's judging before pairs were read in order of length: 32 at a time, as
    asked, each batch padded to its longest pair."""
    judgements: list[Judgement] = []
    for start in range(0, len(pairs), ASKED_ORDER_BATCH):
        batch = encode_pairs(
            judge.tokenizer, pairs[start : start + ASKED_ORDER_BATCH], judge.config.max_length
        )
        probabilities = torch.softmax(judge.model(batch), dim=-1).tolist()
        judgements += [Judgement(entailed=row[0], contradicted=row[2]) for row in probabilities]
    return judgements


def _milliseconds_per_claim(
    judging: Callable[[list[tuple[str, str]]], list[Judgement]], pairs: list[tuple[str, str]]
) -> float:
    started = time.perf_counter()
    judging(pairs)
    return (time.perf_counter() - started) * 1000 / len(pairs)


def _largest_difference(first: list[Judgement], second: list[Judgement]) -> float:
    return max(
        max(abs(a.entailed - b.entailed), abs(a.contradicted - b.contradicted))
        for a, b in zip(first, second, strict=True)
    )


def _report(name: str, judged: list[float], baseline: list[float]) -> None:
    """A baseline's median time per claim and the verifier's round by round against it."""
    ratios = [a / b for a, b in zip(judged, baseline, strict=True)]
    print(
        f"{name}: {statistics.median(baseline):.1f} ms per claim (median); as judged / this: "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds of each")
    args = parser.parse_args(argv)
    if not MTS_VALIDATION.is_file():
        print(f"claim verifier speed: skipped, no {MTS_VALIDATION}")
        return
    with MTS_VALIDATION.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:40]
    pairs = [(row["section_text"][:300], row["dialogue"]) for row in rows]
    folded, apart = ClaimJudge.load(shipped_weights()), adapters_apart()
    judgings: dict[str, Callable[[list[tuple[str, str]]], list[Judgement]]] = {
        "as judged (folded, in order of length)": folded.judge,
        "folded, in the order asked, 32 at a time": lambda p: in_order_asked(folded, p),
        "adapters apart, in order of length": apart.judge,
    }
    answers = {name: judging(pairs) for name, judging in judgings.items()}  # also the warm-up
    timings: dict[str, list[float]] = {name: [] for name in judgings}
    for _ in range(args.rounds):
        for name, judging in judgings.items():
            timings[name].append(_milliseconds_per_claim(judging, pairs))
    shipped = next(iter(judgings))
    print(f"pairs: {len(pairs)}; rounds: {args.rounds}")
    print(f"{shipped}: {statistics.median(timings[shipped]):.1f} ms per claim (median)")
    for name in list(judgings)[1:]:
        difference = _largest_difference(answers[shipped], answers[name])
        _report(name, timings[shipped], timings[name])
        print(f"  answers differ from as judged by {difference:.1e} at most")


if __name__ == "__main__":
    main()
