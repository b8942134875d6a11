"""Drugs to avoid for this patient, from the shipped ``inappropriate_drugs`` table (AGS Beers
Criteria 2023): by age, a drug whose harm in older adults outweighs its use (meperidine, a
benzodiazepine, a first-generation antihistamine at 75), and by disease, an NSAID with heart
failure or coronary heart disease. One Needs review line each, naming the drugs and the harm;
never a decision: Beers lists drugs to question, and a physician may have reasons the record
does not hold."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from pipeline.clinical.risk_flags import active_diagnoses, drug_names, having, risk_flag
from pipeline.clinical.tables import CodeTable, names_it
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


def nsaid_with_disease(
    state: EvidenceState, drugs: Sequence[Fact], table: CodeTable
) -> list[ReviewFlag]:
    """An NSAID with a disease it harms (the table's ``nsaid_with_disease``): heart failure
    (Beers Table 3: fluid retention), coronary heart disease (reinfarction and death: the STEMI
    guideline's class III). A naproxen order beside a heart attack had only the bleeding line,
    which asks to protect the stomach; the harm to the heart was said nowhere. One line for all
    the diseases found, each named by one diagnosis that shows it (the stay's own first). Both
    guidelines say to withdraw it, so the list proposes its stop, for the physician to confirm
    (the ``stop_proposed`` flag: a reader read "confirm it is needed" as leaving it going home)."""
    nsaids = having(drugs, table.extra["nsaid"])
    if not nsaids:
        return []
    found: list[tuple[str, str, list[Fact]]] = []
    for disease, rule in table.extra["nsaid_with_disease"].items():
        showing = active_diagnoses(state, partial(names_it, rule=rule))
        showing.sort(key=lambda f: attributes_as(f, DiagnosisAttributes).listing != "principal")
        if showing:
            found.append((disease, rule["harm"], showing))
    if not found:
        return []
    diseases = " and ".join(
        f"{disease} ({attributes_as(showing[0], DiagnosisAttributes).display})"
        for disease, _, showing in found
    )
    harms = "; ".join(harm for _, harm, _ in found)
    reason = (
        f"An NSAID with {diseases}: {drug_names(nsaids)}: {harms}: proposed stop, unless it is "
        "needed"
    )
    key = "nsaid-" + "-and-".join(disease.replace(" ", "-") for disease, _, _ in found)
    cited = [*nsaids, *(f for *_, showing in found for f in showing)]
    return [risk_flag(key, reason, cited, "stop_proposed")]


def inappropriate_drug_flags(
    state: EvidenceState, drugs: Sequence[Fact], table: CodeTable
) -> list[ReviewFlag]:
    return [
        *avoid_in_older_adults(state, drugs, table),
        *nsaid_with_disease(state, drugs, table),
    ]
