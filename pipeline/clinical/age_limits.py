"""A drug past the age its label limits it to (prasugrel from 75 years), read from the
``indicated_therapy`` table's ``age_limits``: one rule of what the discharge list should hold,
kept apart from the rules that read conditions and procedures."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.risk_flags import drug_names, having, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import EvidenceState, Fact, ReviewFlag


def age_limits(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    aged = state.patient_age()
    if aged is None:
        return []
    patient, age = aged
    flags = []
    for limit in therapy.extra["age_limits"]:
        given = having(going_home, [limit["ingredient"]])
        if given and age >= limit["age"]:
            reason = f"{drug_names(given)} at discharge for a {age}-year-old: {limit['why']}"
            flags.append(risk_flag(f"age-{limit['ingredient']}", reason, [patient, *given]))
    return flags
