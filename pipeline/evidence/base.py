"""What every evidence model shares: strict models (unknown fields refused), codings, and ids
derived from content."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

MedicationPhase = Literal["admission", "inpatient", "discharge", "unknown"]


def stable_id(prefix: str, *parts: object) -> str:
    """Derive an id from content, so the same input always yields the same ids across runs."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:16]}"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Coding(StrictModel):
    system: str | None = None
    code: str | None = None
    display: str | None = None
