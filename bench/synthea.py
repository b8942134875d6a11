"""The shared Synthea bundles the draft benchmarks read (``../shared/data/synthea/california``)."""

from __future__ import annotations

from pathlib import Path

SYNTHEA = Path(__file__).resolve().parents[2] / "shared" / "data" / "synthea" / "california"


def bundles() -> list[Path]:
    """The patients' bundles, without the hospital, practitioner and metadata files."""
    return sorted(
        path
        for path in SYNTHEA.glob("*.json")
        if not path.name.startswith(("hospitalInformation", "practitionerInformation", "metadata"))
    )
