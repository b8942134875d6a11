"""After atherosclerotic cardiovascular disease a high-intensity statin is indicated (2018
AHA/ACC cholesterol guideline): a duplication must not be settled by stopping the stronger statin.

Two statins at discharge are a duplication, and the list proposes to stop the one it would
rather not keep: the order to confirm, or the home drug held or stopped. Readers caught the
draft proposing to stop atorvastatin 40 mg, started after an infarction, in favour of an older
simvastatin 20 mg the notes still list. From the shipped ``statin_intensity`` table (each
statin's intensity by dose, and the diagnoses of clinical ASCVD): where the statin the list would
stop is the stronger one, the duplication becomes one Needs review line that names each statin's
intensity and asks which continues; no stop is proposed. Never a decision: the physician may
have lowered the intensity on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.clinical.risk_flags import active_diagnoses, drug_names, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
)
from pipeline.text.rendering import plain_term

_RANK = {"low": 0, "moderate": 1, "high": 2}


def intensity(name: str, statins: CodeTable) -> str | None:
    """A statin's intensity by its ingredient and the strength named after it ("atorvastatin 40
    MG Oral Tablet": high), or None for a drug that is no statin or a strength the table does
    not place."""
    text = name.lower()
    for row in statins.extra["intensity"]:
        found = re.search(rf"\b{row['ingredient']}\b[^/0-9]*(\d+(?:\.\d+)?)\s*mg\b", text)
        if found and row["from_mg"] <= float(found.group(1)) <= row["to_mg"]:
            return str(row["intensity"])
    return None


def stronger_statin_kept(
    state: EvidenceState,
    flags: Sequence[ReviewFlag],
    discharge: Sequence[Fact],
    unsettled: frozenset[str],
    statins: CodeTable,
) -> list[ReviewFlag]:
    """``flags`` with each statin duplication that would stop the stronger statin, in a patient
    with clinical ASCVD on record, replaced by one line that asks which statin continues."""
    disease = active_diagnoses(state, lambda term: statins.matches(None, term))
    if not disease:
        return list(flags)
    facts = {f.id: f for f in discharge}
    kept = []
    for flag in flags:
        if flag.code == "therapeutic_duplication":
            ranked = _ranked_statins(flag, facts, statins)
            if _stops_the_stronger(ranked, unsettled):
                flag = _which_statin(state, disease, ranked, unsettled, statins)
        kept.append(flag)
    return kept


def _ranked_statins(
    flag: ReviewFlag, facts: dict[str, Fact], statins: CodeTable
) -> list[tuple[Fact, str]]:
    """The statins a flag cites, each with its intensity, strongest first."""
    found = [
        (facts[i], intensity(attributes_as(facts[i], MedicationAttributes).name, statins))
        for i in flag.fact_ids
        if i in facts
    ]
    placed = [(fact, level) for fact, level in found if level is not None]
    return sorted(placed, key=lambda pair: -_RANK[pair[1]])


def _stops_the_stronger(ranked: list[tuple[Fact, str]], unsettled: frozenset[str]) -> bool:
    """Whether every strongest statin is one the list would stop (to confirm, or held) while a
    weaker one goes home."""
    if len(ranked) < 2 or ranked[0][1] == ranked[-1][1]:
        return False
    top = _RANK[ranked[0][1]]
    strongest = [fact for fact, level in ranked if _RANK[level] == top]
    weaker_going_home = [f for f, level in ranked if _RANK[level] < top and f.id not in unsettled]
    return all(f.id in unsettled for f in strongest) and bool(weaker_going_home)


def _which_statin(
    state: EvidenceState,
    disease: list[Fact],
    ranked: list[tuple[Fact, str]],
    unsettled: frozenset[str],
    table: CodeTable,
) -> ReviewFlag:
    """The line that asks which statin continues; past the age where the guideline finds a
    moderate intensity reasonable too (its recommendation 4.1.3), it says so, with the age."""
    named = "; ".join(
        dict.fromkeys(plain_term(attributes_as(f, DiagnosisAttributes).display) for f in disease)
    )
    statins = "; ".join(
        f"{drug_names([fact])} ({level} intensity"
        + (", to confirm" if fact.id in unsettled else ", going home")
        + ")"
        for fact, level in ranked
    )
    aged = state.patient_age()
    indicated, ask = (
        "a high-intensity statin is indicated",
        "the stronger one unless there is a reason not to",
    )
    cited = [*disease, *(f for f, _ in ranked)]
    if aged is not None and aged[1] > table.extra["moderate_reasonable_over"]:
        indicated += f", a moderate-intensity one reasonable at {aged[1]}"
        ask = "and at which intensity"
        cited.append(aged[0])
    reason = (
        f"Statin choice at discharge ({indicated}): {statins}: atherosclerotic cardiovascular "
        f"disease on record ({named}): confirm which statin continues, {ask}"
    )
    return risk_flag("statin-intensity", reason, cited, "choice_in_doubt")
