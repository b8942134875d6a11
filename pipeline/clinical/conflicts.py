"""Conflicts in the evidence: found and flagged for a physician, never resolved by the system."""

from __future__ import annotations

import re
from collections import defaultdict

from pipeline.clinical.medications import drug_key, normalise_quantity
from pipeline.clinical.reconcile import ACTIVE_STATUSES, dose_signature, medication, rxnorm_code
from pipeline.evidence.model import (
    AllergyAttributes,
    Conflict,
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    ReviewFlag,
    attributes_as,
    stable_id,
)
from pipeline.text.rendering import plain_term

_ACTIVE_CONDITION = frozenset({"active", "recurrence", "relapse"})
_RESOLVED_CONDITION = frozenset({"resolved", "inactive", "remission"})
_ALLERGEN_NOISE = re.compile(r"\((?:substance|product|finding|disorder)\)|allergy to|allergic to")


def _conflict(kind: str, description: str, facts: list[Fact]) -> Conflict:
    ids = sorted(fact.id for fact in facts)
    return Conflict(
        id=stable_id("conflict", kind, *ids), kind=kind, description=description, fact_ids=ids
    )


def _duplicate_active_medications(facts: list[Fact]) -> list[Conflict]:
    active = [
        fact
        for fact in facts
        if fact.category == "medication"
        and medication(fact).status in ACTIVE_STATUSES
        and medication(fact).phase != "inpatient"
    ]
    by_drug: dict[str, list[Fact]] = defaultdict(list)
    for fact in active:
        by_drug[drug_key(medication(fact).name)].append(fact)
    conflicts = []
    for key, group in by_drug.items():
        if len({dose_signature(medication(fact)) for fact in group}) > 1:
            shown = "; ".join(
                f"{medication(fact).name} ({medication(fact).dose or 'dose not documented'}, "
                f"{medication(fact).frequency or 'frequency not documented'})"
                for fact in group
            )
            conflicts.append(
                _conflict(
                    "duplicate_active_medication", f"{key}: two active orders: {shown}", group
                )
            )
    return conflicts


def _allergen_key(attributes: AllergyAttributes) -> str:
    return " ".join(_ALLERGEN_NOISE.sub(" ", attributes.substance.lower()).split())


def _medication_allergies(facts: list[Fact]) -> list[Conflict]:
    allergies = [
        fact
        for fact in facts
        if isinstance(fact.attributes, AllergyAttributes) and not fact.attributes.no_known_allergies
    ]
    medications = [fact for fact in facts if fact.category == "medication"]
    conflicts = []
    for allergy in allergies:
        attributes = allergy.attributes
        assert isinstance(attributes, AllergyAttributes)
        allergen = _allergen_key(attributes)
        allergen_code = attributes.code.code if attributes.code else None
        for fact in medications:
            drug = medication(fact)
            name = f" {drug_key(drug.name)} "
            same_code = allergen_code is not None and allergen_code == rxnorm_code(drug)
            if same_code or (allergen and f" {allergen} " in name):
                conflicts.append(
                    _conflict(
                        "medication_allergy",
                        f"{drug.name} is prescribed, and an allergy to {attributes.substance} "
                        "is documented",
                        [allergy, fact],
                    )
                )
    return conflicts


def _condition_key(attributes: DiagnosisAttributes) -> str:
    if attributes.code is not None and attributes.code.code:
        return f"{attributes.code.system}|{attributes.code.code}"
    return attributes.display.lower()


def _condition_statuses(facts: list[Fact]) -> list[Conflict]:
    by_condition: dict[str, list[Fact]] = defaultdict(list)
    for fact in facts:
        if isinstance(fact.attributes, DiagnosisAttributes):
            by_condition[_condition_key(fact.attributes)].append(fact)
    conflicts = []
    for group in by_condition.values():
        diagnoses = [attributes_as(fact, DiagnosisAttributes) for fact in group]
        statuses = {diagnosis.clinical_status for diagnosis in diagnoses}
        if statuses & _ACTIVE_CONDITION and statuses & _RESOLVED_CONDITION:
            said = f"{diagnoses[0].display} is recorded both as active and as resolved"
            conflicts.append(_conflict("condition_status", said, group))
    return conflicts


def _lab_reading(attributes: LabResultAttributes) -> tuple[str | None, str | None]:
    if attributes.value is not None:
        return normalise_quantity(f"{attributes.value} {attributes.unit or ''}"), None
    return None, (attributes.value_text or "").strip().lower()


def _lab_values(facts: list[Fact]) -> list[Conflict]:
    by_test_and_time: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for fact in facts:
        attributes = fact.attributes
        if isinstance(attributes, LabResultAttributes) and attributes.effective is not None:
            test = (
                attributes.code.code
                if attributes.code and attributes.code.code
                else attributes.name
            )
            by_test_and_time[(test, attributes.effective.isoformat())].append(fact)
    conflicts = []
    for (_, when), group in by_test_and_time.items():
        results = [attributes_as(fact, LabResultAttributes) for fact in group]
        readings = {_lab_reading(result) for result in results}
        if len(readings) > 1:
            said = f"{results[0].name} at {when} has {len(readings)} different values"
            conflicts.append(_conflict("lab_value", said, group))
    return conflicts


# "Allergic disposition" (SNOMED 609328004) records a tendency, not an allergy to a substance.
ALLERGIC_DISPOSITION = "609328004"


def _is_disposition(attributes: AllergyAttributes) -> bool:
    code = attributes.code.code if attributes.code else None
    return code == ALLERGIC_DISPOSITION or "allergic disposition" in attributes.substance.lower()


def _allergy_statuses(facts: list[Fact]) -> list[Conflict]:
    """A documented allergy to a substance alongside a statement that there are none."""
    allergies = [f for f in facts if isinstance(f.attributes, AllergyAttributes)]
    none_known = [f for f in allergies if f.attributes.no_known_allergies]  # type: ignore[union-attr]
    known = [
        f
        for f in allergies
        if not f.attributes.no_known_allergies  # type: ignore[union-attr]
        and not _is_disposition(f.attributes)  # type: ignore[arg-type]
    ]
    if not none_known or not known:
        return []
    substances = ", ".join(plain_term(f.attributes.substance) for f in known)  # type: ignore[union-attr]
    stated = none_known[0].attributes.substance  # type: ignore[union-attr]
    return [
        _conflict(
            "allergy_status",
            f"the record lists {substances}, and also says '{stated.rstrip('.')}'",
            none_known + known,
        )
    ]


def find_conflicts(facts: list[Fact]) -> list[Conflict]:
    found = (
        _duplicate_active_medications(facts)
        + _medication_allergies(facts)
        + _allergy_statuses(facts)
        + _condition_statuses(facts)
        + _lab_values(facts)
    )
    unique = {conflict.id: conflict for conflict in found}
    return list(unique.values())


def detect_conflicts(state: EvidenceState) -> tuple[EvidenceState, str]:
    conflicts = find_conflicts(state.all_facts())
    flags = [
        ReviewFlag(
            id=stable_id("flag", conflict.id),
            code="conflict",
            reason=conflict.description,
            raised_by="detect_conflicts",
            fact_ids=conflict.fact_ids,
        )
        for conflict in conflicts
    ]
    kept = [flag for flag in state.flags_for_review if flag.raised_by != "detect_conflicts"]
    updated = state.model_copy(update={"conflicts": conflicts, "flags_for_review": kept + flags})
    return updated, f"found {len(conflicts)} conflicts"


__all__ = ["detect_conflicts", "find_conflicts"]
