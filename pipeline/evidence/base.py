"""What every evidence model shares: strict models (unknown fields refused), codings, the fact
categories, and ids derived from content."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict

MedicationPhase = Literal["admission", "inpatient", "discharge", "unknown"]
# What a fact is about; each attributes model names its own (``pipeline.evidence.attributes``).
FactCategory = Literal[
    "diagnosis",
    "medication",
    "allergy",
    "procedure",
    "lab_result",
    "pending_result",
    "follow_up",
    "course",
    "patient_info",
    "encounter",
    "care_plan",
    "administration",
    "imaging",
    "device",
    "medication_list",
    "condition_statement",
    "social_statement",
    "organ_history",
    "prescription",
    "computed",
]
FACT_CATEGORIES: tuple[FactCategory, ...] = FactCategory.__args__  # type: ignore[attr-defined]


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
