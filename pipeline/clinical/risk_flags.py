"""What the regimen rules share: the drugs that hold an ingredient, their names for a reason, the
stay's results under some codes, and the Needs review flag one rule raises over its facts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    FlagCode,
    LabResultAttributes,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
    stable_id,
)

RAISED_BY = "medication_safety"
CODE: FlagCode = "regimen_risk"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def having(facts: Iterable[Fact], ingredients: Sequence[str]) -> list[Fact]:
    """The drugs whose names hold one of ``ingredients`` as a word (each part of a combination
    counts)."""
    wanted = set(ingredients)
    return [f for f in facts if _words(attributes_as(f, MedicationAttributes).name) & wanted]


def drug_names(facts: Sequence[Fact]) -> str:
    return "; ".join(attributes_as(f, MedicationAttributes).name for f in facts)


def risk_flag(key: str, reason: str, facts: Sequence[Fact], code: FlagCode = CODE) -> ReviewFlag:
    ids = list(dict.fromkeys(f.id for f in facts))
    return ReviewFlag(
        id=stable_id("flag", "regimen", key, *ids),
        code=code,
        reason=reason,
        raised_by=RAISED_BY,
        fact_ids=ids,
    )


def stay_results(state: EvidenceState, codes: Sequence[str]) -> list[Fact]:
    """The stay's dated results (not the baselines before it) under one of ``codes``."""
    return [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and f.attributes.code is not None
        and f.attributes.code.code in codes
        and f.attributes.effective is not None
        and not f.attributes.baseline
    ]
