"""The claim verifier's learning curve: validation figures against the number of training pairs.

    python -m bench.claim_verifier.curve [--sizes 1000 3000] [--limit N]

Trains a verifier on the first N training pairs for each size (``train.py``, same seed, into a
temporary directory), then measures each, and the shipped one, on the validation sets of
``evaluate.py`` (the checker as shipped: words and verifier together). About 3 minutes per
thousand pairs on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.claim_verifier.evaluate import Tally, mts_references, smollm2_labels
from pipeline.backends.claim_judge import ClaimJudge, shipped_weights

ROWS = (
    "fabricated → unsupported (hard)",
    "supported → flagged at all",
    "unchanged sentence → flagged at all",
    "meaning-level corruption, unsupported → caught (hard)",
    "meaning-level corruption, contradicting → caught (hard)",
)


def figures(weights: Path, limit: int | None) -> dict[str, float]:
    judge = ClaimJudge.load(weights)
    tally = Tally()
    smollm2_labels(judge, "validation", tally)
    mts_references(judge, limit, tally)
    return {row: tally.hits[row, "both"] / max(1, tally.tries[row]) for row in ROWS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    trained = json.loads((shipped_weights() / "training.json").read_text())
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for size in args.sizes:
            out = Path(work) / str(size)
            subprocess.run(
                [sys.executable, "-m", "bench.claim_verifier.train", "--pairs", str(size),
                 "--out", str(out)],
                check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            results[size] = figures(out, args.limit)
    results[trained["training_pairs"]] = figures(shipped_weights(), args.limit)
    print("| training pairs | " + " | ".join(ROWS) + " |")
    print("|---" * (len(ROWS) + 1) + "|")
    for size in sorted(results):
        print(f"| {size} | " + " | ".join(f"{results[size][r]:.0%}" for r in ROWS) + " |")


if __name__ == "__main__":
    main()
