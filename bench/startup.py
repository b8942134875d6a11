"""Command-line start-up against the cheapest Python program that does anything of ours.

``provenote --help`` and ``provenote evidence`` import no torch, transformers, Litestar or nltk;
this measures what they cost against ``python -c "import pydantic"`` in fresh interpreters, the
floor any command of this project pays.

Run: ``python -m bench`` (all benchmarks) or ``python -m bench.startup``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

REPEATS = 5


def median_seconds(arguments: list[str]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run([sys.executable, *arguments], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        floor = median_seconds(["-c", "import pydantic"])
        commands = {
            "provenote --help": ["-m", "launch.cli", "--help"],
            "provenote evidence": ["-m", "launch.cli", "evidence", "-o", f"{folder}/state.json"],
            "import torch (for scale)": ["-c", "import torch"],
        }
        print(f"CLI start-up, median of {REPEATS} fresh interpreters")
        print(f"  python -c 'import pydantic' (floor)  {floor:.3f} s")
        for name, arguments in commands.items():
            seconds = median_seconds(arguments)
            print(f"  {name:<36} {seconds:.3f} s  {seconds / floor:.2f}x the floor")


if __name__ == "__main__":
    main()
