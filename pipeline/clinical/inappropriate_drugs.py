"""Drugs to avoid for this patient, from the shipped ``inappropriate_drugs`` table (AGS Beers
Criteria 2023): by age, a drug whose harm in older adults outweighs its use (meperidine, a
benzodiazepine, a first-generation antihistamine at 75), and by disease, an NSAID with heart
failure. One Needs review line each, naming the drugs and the harm; never a decision: Beers
lists drugs to question, and a physician may have reasons the record does not hold."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.risk_flags import drug_names, having, names_it, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    ReviewFlag,
    attributes_as,
)


def avoid_in_older_adults(
    state: EvidenceState, drugs: Sequence[Fact], table: CodeTable
) -> list[ReviewFlag]:
    """Beers Table 2: one line over every drug of a group to avoid from ``older_age``."""
    aged = state.patient_age()
    if aged is None or aged[1] < table.extra["older_age"]:
        return []
    patient, age = aged
    found: list[tuple[str, list[Fact]]] = []
    for group, ingredients in table.extra["avoid_in_older_adults"].items():
        held = having(drugs, ingredients)
        if held:
            found.append((group, held))
    if not found:
        return []
    said = "; ".join(f"{drug_names(held)}: {group}" for group, held in found)
    reason = (
        f"Potentially inappropriate at {age} (AGS Beers Criteria): {said}: confirm each is "
        "needed, or choose an alternative"
    )
    return [risk_flag("beers", reason, [patient, *(f for _, held in found for f in held)])]


def nsaid_in_heart_failure(
    state: EvidenceState, drugs: Sequence[Fact], table: CodeTable
) -> list[ReviewFlag]:
    """Beers Table 3: an NSAID retains fluid and worsens heart failure."""
    nsaids = having(drugs, table.extra["nsaid"])
    failing = [
        f
        for f in state.facts["diagnosis"]
        if not attributes_as(f, DiagnosisAttributes).abatement
        and names_it(attributes_as(f, DiagnosisAttributes).display, table.extra["heart_failure"])
    ]
    if not (nsaids and failing):
        return []
    named = "; ".join(dict.fromkeys(attributes_as(f, DiagnosisAttributes).display for f in failing))
    reason = (
        f"An NSAID with heart failure ({named}): {drug_names(nsaids)}: NSAIDs retain fluid and "
        "worsen heart failure (AGS Beers Criteria; ACC/AHA/HFSA heart failure guideline): "
        "confirm it is needed"
    )
    return [risk_flag("nsaid-heart-failure", reason, [*nsaids, *failing])]


def inappropriate_drug_flags(
    state: EvidenceState, drugs: Sequence[Fact], table: CodeTable
) -> list[ReviewFlag]:
    return [
        *avoid_in_older_adults(state, drugs, table),
        *nsaid_in_heart_failure(state, drugs, table),
    ]
