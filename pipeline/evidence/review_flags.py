"""What the agents tell the physician and the trace: conflicts between sources, review flags,
one trace event per agent step, and the resources left out, each with why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from pipeline.evidence.base import StrictModel, stable_id

ConflictKind = Literal[
    "duplicate_active_medication",
    "medication_allergy",
    "allergy_status",
    "condition_status",
    "lab_value",
]


class Conflict(StrictModel):
    """Two pieces of evidence that cannot both be true; flagged, never decided by the system."""

    id: str
    kind: ConflictKind
    description: str
    fact_ids: list[str]


FlagCode = Literal[
    "wrong_patient_document",
    "conflict",
    "unexplained_medication_change",
    "incomplete_medication",
    "medication_phase_unknown",
    "document_error",
    "page_unread",
    "fact_rejected",
    "loop_budget_exhausted",
    "stale_condition",
    "therapeutic_duplication",
    "choice_in_doubt",
    "stop_proposed",
    "allergy_conflict",
    "no_discharge_medications",
    "medication_discrepancy",
    "strength_discrepancy",
    "critical_result",
    "acute_kidney_injury",
    "unstable_at_discharge",
    "medication_not_renewed",
    "regimen_risk",
    "expected_drug_missing",
    "schedule_in_doubt",
    "home_medication_not_ordered",
    "prescribed_not_ordered",
    "note_instruction",
]


class ReviewFlag(StrictModel):
    id: str
    code: FlagCode
    reason: str
    raised_by: str
    fact_ids: list[str] = Field(default_factory=list)
    document: str | None = None

    @classmethod
    def on_facts(
        cls, key: tuple[str, ...], code: FlagCode, reason: str, raised_by: str, facts: Sequence[str]
    ) -> ReviewFlag:
        """A flag on facts, its id derived from ``key`` and the facts: the same flag on the same
        facts keeps its id from one draft to the next, so a physician's answer to it holds."""
        return cls(
            id=stable_id("flag", *key, *facts),
            code=code,
            reason=reason,
            raised_by=raised_by,
            fact_ids=list(dict.fromkeys(facts)),
        )


class TraceEvent(StrictModel):
    step: int
    agent: str
    action: str
    detail: str
    resource: str | None = None
    document: str | None = None


ExclusionKind = Literal[
    "out_of_scope",
    "status",
    "historical",
    "parse_error",
    "unresolved",
    "not_fetched",
    "ai_generated",
]


class Exclusion(StrictModel):
    """A resource read but not turned into a fact, and why: nothing is dropped silently."""

    resource: str
    kind: ExclusionKind
    reason: str
