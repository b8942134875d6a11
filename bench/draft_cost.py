"""What an evidence-only draft costs, as a user runs it: ``provenote summarize BUNDLE`` in a fresh
process against parsing the same bundle with fhir.resources (R4B) in a fresh process, CPU seconds
and peak memory, for each of the 15 Synthea stays (median and worst). #39 asks for 3x or less on
both; a first measurement said 14.7x CPU and 11x memory.

Run: ``python -m bench.draft_cost``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.synthea import bundles

PARSE = (
    "import json, sys\n"
    "from fhir.resources.R4B.bundle import Bundle\n"
    "Bundle.model_validate(json.load(open(sys.argv[1], encoding='utf-8')))\n"
)


def cost(arguments: list[str]) -> tuple[float, float]:
    """CPU seconds (user and system) and peak resident MiB of one fresh process."""
    child = subprocess.Popen(
        [sys.executable, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{arguments} failed ({child.returncode})")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for path in bundles():
            if path.suffix != ".json":
                continue
            out = Path(folder) / f"{path.stem}.json"
            draft = cost(["-m", "launch.cli", "summarize", str(path), "-o", str(out)])
            parse = cost(["-c", PARSE, str(path)])
            rows.append((path.stem[:8], draft, parse))
    print("Evidence-only draft against parsing the bundle, fresh processes (CPU s, peak MiB)")
    cpu = [draft[0] / parse[0] for _, draft, parse in rows]
    memory = [draft[1] / parse[1] for _, draft, parse in rows]
    for (stay, draft, parse), cpu_ratio, memory_ratio in zip(rows, cpu, memory, strict=True):
        print(
            f"  {stay}  draft {draft[0]:5.2f} s {draft[1]:6.0f} MiB   parse {parse[0]:5.2f} s "
            f"{parse[1]:6.0f} MiB   {cpu_ratio:5.2f}x CPU {memory_ratio:5.2f}x memory"
        )
    print(
        f"  CPU: median {statistics.median(cpu):.2f}x, worst {max(cpu):.2f}x; "
        f"memory: median {statistics.median(memory):.2f}x, worst {max(memory):.2f}x"
    )


if __name__ == "__main__":
    main()
