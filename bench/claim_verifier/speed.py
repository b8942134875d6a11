"""The claim verifier's cost per claim with its adapters folded into their layers (as it loads),
against the same weights with the adapters apart (as they were trained), in one run.

    python -m bench.claim_verifier.speed [--rounds N]

The two judge the same 40 MTS-Dialog validation pairs (a reference's sentence against its whole
dialogue, the longest evidence the checker gives), in turn, A B A B …, so that a drift of the
machine's speed falls on both; it prints each one's median milliseconds per claim and the median
of the pair-by-pair ratios, and the largest difference between their answers.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Sequence

from bench.checker_quality import VALIDATION as MTS_VALIDATION
from pipeline.backends.claim_judge import ClaimJudge, JudgeConfig, base_model, shipped_weights


def adapters_apart() -> ClaimJudge:
    """The shipped verifier as training left it: each adapter beside its frozen layer."""
    from safetensors.torch import load_file

    weights = shipped_weights()
    config = JudgeConfig.model_validate_json((weights / "config.json").read_text())
    tokenizer, model = base_model(config)
    model.load_state_dict(load_file(str(weights / "adapter.safetensors")), strict=False)
    return ClaimJudge(tokenizer, model, config)


def _milliseconds_per_claim(judge: ClaimJudge, pairs: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    judge.judge(pairs)
    return (time.perf_counter() - started) * 1000 / len(pairs)


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
    answers = zip(folded.judge(pairs), apart.judge(pairs), strict=True)  # also the warm-up
    difference = max(
        max(abs(a.entailed - b.entailed), abs(a.contradicted - b.contradicted)) for a, b in answers
    )
    timings: list[tuple[float, float]] = [
        (_milliseconds_per_claim(folded, pairs), _milliseconds_per_claim(apart, pairs))
        for _ in range(args.rounds)
    ]
    print(f"pairs: {len(pairs)}; rounds: {args.rounds}; answers differ by {difference:.1e} at most")
    print(f"adapters folded: {statistics.median(a for a, _ in timings):.1f} ms per claim (median)")
    print(f"adapters apart:  {statistics.median(b for _, b in timings):.1f} ms per claim (median)")
    ratios = [a / b for a, b in timings]
    print(
        f"folded / apart: {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
