"""Where the time goes when launches arrive together: five launches one after another, then the
same five at once, stage by stage (the launch itself, the record pull, evidence, drafting and
the write-back), on the sandbox EHR and SQLite, in one run.

A stage that grows far more than the others under concurrency is the contended part: the pull
and the write-back wait on the sandbox's one Node FHIR server, evidence and drafting on the CPU,
and every stage on the database. Run: ``python -m bench.concurrent_launches``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from bench.launch_to_draft import STAGES, Stamps, launch_once, launched_app

LAUNCHES = 5


def _medians(runs: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    by_stage: dict[str, list[float]] = defaultdict(list)
    for total, stages in runs:
        by_stage["total"].append(total)
        for stage, seconds in stages.items():
            by_stage[stage].append(seconds)
    return {stage: statistics.median(values) for stage, values in by_stage.items()}


def main() -> None:
    stamps: Stamps = defaultdict(list)
    with launched_app(stamps) as (sandbox, base_url, chosen):
        alone_stays, together_stays = chosen[:LAUNCHES], chosen[LAUNCHES : 2 * LAUNCHES]
        alone = [launch_once(sandbox, base_url, stamps, *stay) for stay in alone_stays]
        with ThreadPoolExecutor(max_workers=LAUNCHES) as pool:
            together = list(
                pool.map(lambda stay: launch_once(sandbox, base_url, stamps, *stay), together_stays)
            )
    one, five = _medians(alone), _medians(together)
    print(f"{LAUNCHES} launches alone, then {LAUNCHES} other stays at once (median seconds)")
    print(f"  {'stage':<13} {'alone':>7} {'at once':>8} {'ratio':>6}")
    for stage in (*STAGES, "total"):
        if stage in one and stage in five:
            ratio = five[stage] / one[stage] if one[stage] else float("nan")
            print(f"  {stage:<13} {one[stage]:7.3f} {five[stage]:8.3f} {ratio:6.2f}")
    print(f"  slowest at once: {max(total for total, _ in together):.3f} s")


if __name__ == "__main__":
    main()
