"""MedicationRequest to medication facts, each placed in a phase of the stay.

Phase rules, applied in order (``phase_rule`` on every fact says which one placed it):

1. ``entered-in-error``, ``cancelled`` or ``draft`` orders were never given: excluded.
2. Authored after discharge: excluded, it is not part of this stay.
3. Ordered in the episode (it references one of its encounters, or was authored inside it):
   ``inpatient`` when its category is inpatient, or when it was ``completed`` or ``stopped``
   by discharge (given during the stay: never a NEW discharge medication); otherwise
   ``discharge``, an order active at discharge.
4. No authoredOn and no encounter reference: phase ``unknown`` (flagged, never guessed).
5. Authored before admission:
   - an end date (``dispenseRequest.validityPeriod.end`` or a dosage's ``boundsPeriod.end``)
     before admission means it had ended: excluded as historical; an end during or after the stay
     means it was taken at admission: ``admission``;
   - otherwise ``active`` or ``on-hold`` means still taken: ``admission``;
   - ``completed`` is a historical prescription, not a current medication: excluded;
   - ``stopped`` or ``unknown`` without an end date cannot be placed: ``unknown``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fhir.resources.R4B.condition import Condition
from fhir.resources.R4B.dosage import Dosage
from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.medication import Medication
from fhir.resources.R4B.medicationrequest import MedicationRequest
from fhir.resources.R4B.medicationstatement import MedicationStatement
from fhir.resources.R4B.observation import Observation
from fhir.resources.R4B.resource import Resource

from fhir_mapping.codes import (
    RXNORM,
    as_datetime,
    concept_text,
    first_coding,
)
from fhir_mapping.demographics import clinical_reasons
from fhir_mapping.dosage import dosage_attributes
from fhir_mapping.mapped import Mapped, ref
from fhir_mapping.resources import ParsedResource, as_type
from fhir_mapping.scope import Scope
from pipeline.evidence.model import (
    Coding,
    ExclusionKind,
    Fact,
    MedicationAttributes,
    MedicationPhase,
    SourceRef,
    stable_id,
)

# What states a medication: an order, or a statement of what the patient takes.
Order = MedicationRequest | MedicationStatement

_NEVER_GIVEN = frozenset({"entered-in-error", "cancelled", "draft"})


@dataclass(frozen=True, slots=True)
class PhaseDecision:
    phase: MedicationPhase | None
    rule: str
    exclusion: ExclusionKind | None = None


def classify_phase(
    *,
    status: str | None,
    inpatient_category: bool,
    authored: datetime | None,
    ordered_in_stay: bool,
    ends: datetime | None,
    scope: Scope,
) -> PhaseDecision:
    """Place one order relative to the stay, by the rules in the module docstring."""
    if status in _NEVER_GIVEN:
        return PhaseDecision(None, f"status is {status}", "status")
    if scope.after_discharge(authored):
        return PhaseDecision(
            None, f"ordered {authored.isoformat()}, after the stay", "out_of_scope"
        )
    if ordered_in_stay or scope.during_stay(authored):
        if inpatient_category:
            return PhaseDecision("inpatient", "ordered in the stay for inpatient use")
        if status in {"completed", "stopped"} and (ends is None or not scope.after_discharge(ends)):
            return PhaseDecision("inpatient", f"ordered in the stay, {status} by discharge")
        return PhaseDecision("discharge", "ordered in the stay, active at discharge")
    if authored is None:
        return PhaseDecision("unknown", "no order date and no encounter: cannot place it")
    if ends is not None and scope.start is not None:
        if ends < scope.start:
            return PhaseDecision(None, f"ended {ends.isoformat()}, before admission", "historical")
        return PhaseDecision("admission", "ordered before admission, ending during or after it")
    if status in {"active", "on-hold"}:
        return PhaseDecision("admission", f"ordered before admission and still {status}")
    if status == "completed":
        return PhaseDecision(None, "completed prescription from before admission", "historical")
    return PhaseDecision("unknown", f"ordered before admission, {status} on an undocumented date")


def _end_date(request: MedicationRequest) -> datetime | None:
    dispense = request.dispenseRequest
    if dispense is not None and dispense.validityPeriod is not None:
        end = as_datetime(dispense.validityPeriod.end)
        if end is not None:
            return end
    for dosage in request.dosageInstruction or []:
        repeat = dosage.timing.repeat if dosage.timing is not None else None
        if repeat is not None and repeat.boundsPeriod is not None:
            end = as_datetime(repeat.boundsPeriod.end)
            if end is not None:
                return end
    return None


# Visits for a problem or a symptom (SNOMED CT 185347001, 185345009): the one drug such a visit
# orders treats what it was for; a check-up's reason (an injury seen the same day) says nothing
# of the drugs it renews, nor does a problem visit's of the three heart drugs it wrote at once.
_PROBLEM_VISITS = frozenset({"185347001", "185345009"})


def _orders_by_visit(scope: Scope) -> Counter[str]:
    """How many of the patient's orders each encounter wrote."""
    return Counter(
        key
        for item in scope.of_patient(MedicationRequest)
        if item.model.encounter is not None
        and (key := scope.index.resolve_key(item.model.encounter.reference)) is not None
    )


def _visit_reason(request: MedicationRequest, scope: Scope, orders: Counter[str]) -> str | None:
    """What the visit that wrote an order before the episode was for, where that visit was for
    a problem or a symptom, names one, and wrote this order alone."""
    if request.encounter is None or scope.is_encounter(request.encounter):
        return None
    key = scope.index.resolve_key(request.encounter.reference)
    visit = as_type(scope.index.by_key[key], Encounter) if key is not None else None
    if visit is None or orders[visit.key] != 1:
        return None
    types = {coding.code for kind in visit.model.type or [] for coding in kind.coding or []}
    reasons = clinical_reasons(visit.model) if types & _PROBLEM_VISITS else []
    return concept_text(reasons[0]) if reasons else None


def _reason(request: MedicationRequest, scope: Scope) -> str | None:
    for concept in [*(request.reasonCode or []), request.statusReason]:
        text = concept_text(concept)
        if text:
            return text
    for reference in request.reasonReference or []:
        target = scope.index.resolve(reference.reference, Resource)
        code = target.code if isinstance(target, (Condition, Observation)) else None
        text = concept_text(code) or reference.display
        if text:
            return text
    return None


@dataclass(frozen=True, slots=True)
class IdentifiedDrug:
    """What an order or a statement says of its drug, read the same way for both: the fields
    of ``MedicationAttributes`` that name it and its dosage, its RxNorm coding and its
    sources."""

    fields: dict[str, Any]
    rxnorm: Coding | None
    sources: list[SourceRef]


def identified_drug(
    item: ParsedResource[Order], scope: Scope, mapped: Mapped, dosage: Dosage | None
) -> IdentifiedDrug | None:
    """The drug of an order or a statement and its ``dosage``; None when the drug cannot be
    read, the resource then excluded as unresolved with the reason."""
    found = _concept(item, scope)
    if isinstance(found, str):
        mapped.exclude(item, "unresolved", found)
        return None
    concept, sources, name = found
    rxnorm = first_coding(concept, RXNORM)
    named = {"name": name, "code": rxnorm or first_coding(concept)}
    return IdentifiedDrug(named | dosage_attributes(dosage, name), rxnorm, sources)


def _concept(item: ParsedResource[Order], scope: Scope) -> tuple[Any, list[SourceRef], str] | str:
    request = item.model
    if request.medicationCodeableConcept is not None:
        concept = request.medicationCodeableConcept
        return concept, [ref(item, "medicationCodeableConcept")], _name(concept)
    reference = request.medicationReference.reference if request.medicationReference else None
    target = scope.index.resolve(reference, Medication, container=item)
    if target is None or target.code is None:
        return f"medicationReference {reference!r} does not resolve to a coded Medication"
    sources = [ref(item, "medicationReference")]
    key = scope.index.resolve_key(reference)
    if key is not None:
        sources.append(ref(scope.index.by_key[key], "code"))
    return target.code, sources, _name(target.code)


def _name(concept: Any) -> str:
    return concept_text(concept) or "medication not named"


def _earlier_orders(scope: Scope) -> dict[str, datetime]:
    """By RxNorm code: the latest order of the drug written before the episode began (any
    status but never given), so that an order of the stay can be told a renewal."""
    latest: dict[str, datetime] = {}
    for item in scope.index.of_type(MedicationRequest):
        request = item.model
        authored = as_datetime(request.authoredOn)
        concept = request.medicationCodeableConcept
        coding = first_coding(concept, RXNORM) if concept is not None else None
        if (
            coding is None
            or not coding.code
            or not scope.before_episode(authored)
            or request.status in _NEVER_GIVEN
            or not scope.is_patient(request.subject)
        ):
            continue
        if coding.code not in latest or authored > latest[coding.code]:
            latest[coding.code] = authored
    return latest


def map_medications(scope: Scope) -> Mapped:
    mapped = Mapped()
    earlier = _earlier_orders(scope)
    orders = _orders_by_visit(scope)
    for item in scope.of_patient(MedicationRequest):
        request = item.model
        categories = {
            coding.code for concept in request.category or [] for coding in concept.coding or []
        }
        authored = as_datetime(request.authoredOn)
        decision = classify_phase(
            status=request.status,
            inpatient_category="inpatient" in categories,
            authored=authored,
            ordered_in_stay=scope.is_encounter(request.encounter),
            ends=_end_date(request),
            scope=scope,
        )
        if decision.phase is None:
            assert decision.exclusion is not None
            mapped.exclude(item, decision.exclusion, decision.rule)
            continue
        dosage = request.dosageInstruction[0] if request.dosageInstruction else None
        drug = identified_drug(item, scope, mapped, dosage)
        if drug is None:
            continue
        rxnorm = drug.rxnorm
        reason = _reason(request, scope)
        attributes = MedicationAttributes(
            **drug.fields,
            status=request.status,
            intent=request.intent,
            request_category=", ".join(sorted(code for code in categories if code)) or None,
            authored_on=authored,
            phase=decision.phase,
            phase_rule=decision.rule,
            reason=reason,
            # An order's own reason is said; the visit's only stands in where it names none.
            ordered_at_visit_for=None if reason else _visit_reason(request, scope, orders),
            prescriber=request.requester.display if request.requester else None,
            last_ordered_before=(
                earlier.get(rxnorm.code or "")
                if rxnorm is not None and decision.phase == "discharge"
                else None
            ),
        )
        mapped.facts.append(medication_fact(item, attributes, drug.sources))
    return mapped


def medication_fact(
    item: ParsedResource[Order], attributes: MedicationAttributes, sources: list[SourceRef]
) -> Fact:
    """The medication fact of one order or statement."""
    return Fact(
        id=stable_id("medication", item.key),
        category="medication",
        attributes=attributes,
        sources=sources,
    )
