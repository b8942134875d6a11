"""Totals of a paired blind reading: each stay's draft before and after a change, read side by
side by one reader (bench/reviews/PROTOCOL.md, "Paired readings").

    python -m bench.paired_readings bench/reviews/after14

Reads the round's ``pair*.md`` (a JSON block per draft under ``## <stay> A`` or ``## <stay> B``,
and a ``preferred: A|B`` line per stay) and its ``pair_key.json`` (which of A and B was made
before the change), and prints per stay and in total: minutes, unsafe, signable after minor
edits and noise, before and after, and which the reader would rather start from. Readers differ
more than drafts do; within a pair the reader is the same, so the difference is the change's.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

SECTION = re.compile(r"^## (\w+) ([AB])\s*$", re.MULTILINE)
BLOCK = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
PREFERRED = re.compile(r"preferred:\s*\**\s*([AB])\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    minutes: int
    unsafe: bool
    signable: bool
    noise: int


def _readings(text: str) -> dict[tuple[str, str], Reading]:
    """Each draft's reading, by (stay, A or B): the first JSON block under its heading."""
    found = {}
    starts = list(SECTION.finditer(text))
    for position, heading in enumerate(starts):
        end = starts[position + 1].start() if position + 1 < len(starts) else len(text)
        block = BLOCK.search(text, heading.end(), end)
        if block is None:
            continue
        judged = json.loads(block.group(1))
        found[(heading.group(1), heading.group(2))] = Reading(
            int(judged["minutes"]),
            bool(judged["unsafe"]),
            bool(judged["signable_after_minor_edits"]),
            int(judged["noise_percent"]),
        )
    return found


def _preferences(text: str, stays: set[str]) -> dict[str, str]:
    """The draft each stay's reader would rather start from: the first ``preferred:`` after the
    stay's B section."""
    chosen = {}
    for stay in stays:
        heading = re.search(rf"^## {stay} B\s*$", text, re.MULTILINE)
        said = PREFERRED.search(text, heading.end()) if heading else None
        if said:
            chosen[stay] = said.group(1).upper()
    return chosen


def report(round_dir: Path) -> list[str]:
    key = json.loads((round_dir / "pair_key.json").read_text(encoding="utf-8"))
    readings: dict[tuple[str, str], Reading] = {}
    preferred: dict[str, str] = {}
    for path in sorted(round_dir.glob("pair*.md")):
        text = path.read_text(encoding="utf-8")
        found = _readings(text)
        readings |= found
        preferred |= _preferences(text, {stay for stay, _ in found})
    lines = [
        "| stay | minutes before → after | unsafe before → after "
        "| signable before → after | noise before → after | preferred |",
        "|---|---|---|---|---|---|",
    ]
    before, after = [], []
    for stay in sorted(key):
        label = {key[stay]["A"]: "A", key[stay]["B"]: "B"}
        was, now = readings.get((stay, label["before"])), readings.get((stay, label["after"]))
        if was is None or now is None:
            continue
        before.append(was)
        after.append(now)
        choice = preferred.get(stay)
        said = "after" if choice == label["after"] else "before" if choice else "?"
        lines.append(
            f"| {stay} | {was.minutes} → {now.minutes} | {was.unsafe} → {now.unsafe} "
            f"| {was.signable} → {now.signable} | {was.noise} → {now.noise} % | {said} |"
        )
    if not before:
        return lines
    chose_after = sum(
        1 for stay in key if preferred.get(stay) == {"after": "A", "before": "B"}[key[stay]["A"]]
    )
    lines += [
        "",
        f"{len(before)} stays: median minutes {statistics.median(r.minutes for r in before)} → "
        f"{statistics.median(r.minutes for r in after)}; unsafe {sum(r.unsafe for r in before)}"
        f" → {sum(r.unsafe for r in after)}; signable after minor edits "
        f"{sum(r.signable for r in before)} → {sum(r.signable for r in after)}; median noise "
        f"{statistics.median(r.noise for r in before)} → "
        f"{statistics.median(r.noise for r in after)} %; the after draft preferred for "
        f"{chose_after} of {len(before)}",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("round_dir", type=Path)
    print("\n".join(report(parser.parse_args().round_dir)))


if __name__ == "__main__":
    main()
