"""What the regimen rules share: the drugs that hold an ingredient, their names for a reason,
the home drugs with no discharge order that hold one, the diagnoses still active that a rule
names, the stay's results under some codes and the latest of them, whether a moment falls in
the stay, and the Needs review flag one rule raises over its facts (whether a clinical term
names a table rule's subject is the tables' ``names_it``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    FlagCode,
    LabResultAttributes,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)

RAISED_BY = "medication_safety"
CODE: FlagCode = "regimen_risk"


def during_stay(state: EvidenceState, moment: datetime | None) -> bool:
    """Whether ``moment`` falls within the stay (a stay still open runs to now)."""
    stay = state.stay()
    if stay is None or stay.start is None or moment is None:
        return False
    return aware(stay.start) <= aware(moment) <= aware(stay.end or datetime.max)


def words(text: str) -> set[str]:
    """The lower-case words of a drug's name or a clinical term."""
    return set(re.findall(r"[a-z]+", text.lower()))


def having(facts: Iterable[Fact], ingredients: Sequence[str]) -> list[Fact]:
    """The drugs whose names hold one of ``ingredients`` as a word (each part of a combination
    counts)."""
    wanted = set(ingredients)
    return [f for f in facts if words(attributes_as(f, MedicationAttributes).name) & wanted]


def drug_names(facts: Sequence[Fact]) -> str:
    return "; ".join(attributes_as(f, MedicationAttributes).name for f in facts)


def active_diagnoses(state: EvidenceState, names: Callable[[str], bool]) -> list[Fact]:
    """The diagnoses on record, not abated, whose term ``names`` accepts (a disease an NSAID
    harms, a chronic pain condition)."""
    return [
        f
        for f in state.facts["diagnosis"]
        if not attributes_as(f, DiagnosisAttributes).abatement
        and names(attributes_as(f, DiagnosisAttributes).display)
    ]


def risk_flag(key: str, reason: str, facts: Sequence[Fact], code: FlagCode = CODE) -> ReviewFlag:
    ids = list(dict.fromkeys(f.id for f in facts))
    return ReviewFlag.on_facts(("regimen", key), code, reason, RAISED_BY, ids)


def _dated_results(state: EvidenceState, codes: Sequence[str]) -> list[Fact]:
    return [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and f.attributes.code is not None
        and f.attributes.code.code in codes
        and f.attributes.effective is not None
    ]


def stay_results(state: EvidenceState, codes: Sequence[str]) -> list[Fact]:
    """The stay's dated results (not the baselines before it) under one of ``codes``."""
    return [
        f
        for f in _dated_results(state, codes)
        if not attributes_as(f, LabResultAttributes).baseline
    ]


def current_results(state: EvidenceState, codes: Sequence[str]) -> list[Fact]:
    """The stay's results under ``codes``; where the stay measured none, the latest of the days
    before admission (a baseline the stay never repeated is still the current value)."""
    dated = _dated_results(state, codes)
    found = [f for f in dated if not attributes_as(f, LabResultAttributes).baseline]
    return found or dated


def results_since(state: EvidenceState, codes: Sequence[str], days_before: int) -> list[Fact]:
    """The stay's results under ``codes`` and those of the ``days_before`` before admission (a
    measure the mapping reads back that far: an HbA1c of the 3 months before)."""
    stay = state.stay()
    if stay is None or stay.start is None:
        return stay_results(state, codes)
    since = aware(stay.start) - timedelta(days=days_before)
    return [
        f
        for f in _dated_results(state, codes)
        if aware(attributes_as(f, LabResultAttributes).effective or datetime.min) >= since
    ]


def latest_of(results: Sequence[Fact]) -> LabResultAttributes | None:
    """The latest of ``results`` that has a value and a date."""
    dated = [
        attributes_as(f, LabResultAttributes)
        for f in results
        if attributes_as(f, LabResultAttributes).value is not None
    ]
    dated = [result for result in dated if result.effective is not None]
    return max(dated, key=lambda r: aware(r.effective or datetime.min)) if dated else None


def fact_of(results: Sequence[Fact], result: LabResultAttributes) -> Fact:
    return next(f for f in results if f.attributes is result)


def latest_fact(results: Sequence[Fact]) -> Fact | None:
    """The fact of the latest of ``results`` that has a value and a date."""
    latest = latest_of(results)
    return fact_of(results, latest) if latest is not None else None


# How a home drug with no discharge order is named on a rule's line, by where it stands.
_AT_HOME = {
    "held_or_stopped": "at home, held or stopped?",
    "in_place": "in place from before the stay",
}


def held_at_home(
    state: EvidenceState, drugs: Sequence[str], in_place: bool = False
) -> list[tuple[Fact, str]]:
    """Home drugs with no discharge order (held or stopped?; with ``in_place``, a device's drug
    in place too) that hold one of ``drugs`` as a word, each with the fact that names it (the
    statement or the note's line)."""
    wanted = set(drugs)
    kinds = set(_AT_HOME) if in_place else {"held_or_stopped"}
    found = []
    for change in state.medications.changes:
        cited = change.admission or change.noted
        words = set(re.findall(r"[a-z]+", change.name.lower()))
        if change.kind in kinds and cited and words & wanted:
            found.append((state.fact(cited), f"{change.name} ({_AT_HOME[change.kind]})"))
    return found
