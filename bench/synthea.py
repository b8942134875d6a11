"""The shared Synthea bundles the draft benchmarks read: ``../shared/data/synthea/california``,
the stays the rules are tuned on, and ``california_validation``, the stays they are judged on
(gzipped)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

SYNTHEA = Path(__file__).resolve().parents[2] / "shared" / "data" / "synthea" / "california"
SPLITS = ("california", "california_validation")


def bundles(split: str = "california") -> list[Path]:
    """The split's patients' bundles (gzipped or not), without the hospital, practitioner and
    metadata files."""
    return sorted(
        path
        for path in (SYNTHEA.parent / split).glob("*.json*")
        if not path.name.startswith(("hospitalInformation", "practitionerInformation", "metadata"))
    )


def read_bundle(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return json.load(handle)
