"""Which encounters make one hospitalization: the **episode** of an inpatient stay.

The stay plus every encounter of the patient that overlaps it, is ``partOf`` it, or ends within a
window (default 48 h) before it starts having done something (the emergency visit before
admission, a procedure or step-down encounter), and an inpatient stay that ended within
``READMISSION_WINDOW_DAYS`` before it whose care the stay continues (a readmission). Each member
carries why it belongs, which the draft says. What falls inside the episode is ``scope``'s.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.patient import Patient
from fhir.resources.R4B.procedure import Procedure
from fhir.resources.R4B.reference import Reference

from fhir_mapping.codes import as_datetime
from fhir_mapping.resources import ParsedResource, ResourceIndex
from pipeline.evidence.mapped import INPATIENT_CLASSES, READMISSION_WINDOW_DAYS

# Why an earlier inpatient stay is in the episode: the stay continues its care (a readmission).
READMISSION = "the inpatient stay just before (a readmission)"
ACUTE_CARE_CLASSES = INPATIENT_CLASSES | {"EMER"}


def encounter_period(
    encounter: ParsedResource[Encounter],
) -> tuple[datetime | None, datetime | None]:
    period = encounter.model.period
    if period is None:
        return None, None
    return as_datetime(period.start), as_datetime(period.end)


def encounter_class(encounter: ParsedResource[Encounter]) -> str | None:
    kind = encounter.model.class_fhir
    return kind.code if kind is not None else None


def encounter_start(encounter: ParsedResource[Encounter]) -> datetime:
    period = encounter.model.period
    start = as_datetime(period.start) if period is not None else None
    return start or datetime.min.replace(tzinfo=UTC)


def refers_to(index: ResourceIndex, reference: Reference | None, key: str) -> bool:
    """Whether a Reference points at the resource ``key``; a missing one points nowhere."""
    if reference is None or not reference.reference:
        return False
    return index.resolve_key(reference.reference) == key


def episode_of(
    index: ResourceIndex,
    patient: ParsedResource[Patient],
    stay: ParsedResource[Encounter],
    window: timedelta,
) -> dict[str, str]:
    """The stay's encounters, each with why it belongs to the episode: part of it, overlapping
    it, ending within ``window`` before admission having done something (a procedure on it, a
    reason for it, or an emergency visit: a check-up the day before does not belong), or an
    inpatient stay that ended within the readmission window before admission."""
    start, end = encounter_period(stay)
    members = {stay.key: "the inpatient stay"}
    with_procedures = {
        index.resolve_key(item.model.encounter.reference)
        for item in index.of_type(Procedure)
        if item.model.encounter is not None and item.model.encounter.reference
    }
    for item in index.of_type(Encounter):
        if item.key == stay.key or not refers_to(index, item.model.subject, patient.key):
            continue
        other_start, other_end = encounter_period(item)
        part_of = item.model.partOf
        if part_of is not None and index.resolve_key(part_of.reference) == stay.key:
            members[item.key] = "part of the stay"
        elif (
            start is not None
            and other_start is not None
            and other_start <= (end or datetime.now(UTC))
            and (other_end is None or other_end >= start)
        ):
            members[item.key] = "overlaps the stay"
        elif start is not None and other_end is not None and start - window <= other_end < start:
            did = _what_it_did(item, with_procedures)
            if did is not None:
                hours = (start - other_end).total_seconds() / 3600
                members[item.key] = f"{did}, ended {hours:.1f} h before admission"
        if item.key not in members and _continued_by(item, stay):
            members[item.key] = READMISSION
    return members


def concept_keys(concept: CodeableConcept | None) -> set[str]:
    """What a concept can be matched by: each coding's code (else display) and its text,
    lower-cased."""
    if concept is None:
        return set()
    keys = {(coding.code or coding.display or "").lower() for coding in concept.coding or []}
    return keys | ({concept.text.lower()} if concept.text else set())


def reasons_of(encounter: ParsedResource[Encounter]) -> set[str]:
    """The encounter's reasons, by code and by text, lower-cased."""
    return {key for concept in encounter.model.reasonCode or [] for key in concept_keys(concept)}


def _continued_by(earlier: ParsedResource[Encounter], stay: ParsedResource[Encounter]) -> bool:
    """An inpatient stay that ended within the readmission window before the stay began, whose
    care the stay continues: the same reason, or a stay that names no reason of its own (the
    ward stay after the operation)."""
    admitted, ended = encounter_period(stay)[0], encounter_period(earlier)[1]
    return (
        admitted is not None
        and ended is not None
        and encounter_class(earlier) in INPATIENT_CLASSES
        and admitted - timedelta(days=READMISSION_WINDOW_DAYS) <= ended < admitted
        and (not reasons_of(stay) or bool(reasons_of(stay) & reasons_of(earlier)))
    )


def _what_it_did(
    encounter: ParsedResource[Encounter], with_procedures: set[str | None]
) -> str | None:
    """Why an encounter just before admission belongs to the episode, or None."""
    model = encounter.model
    if model.class_fhir is not None and model.class_fhir.code == "EMER":
        return "the emergency visit"
    if encounter.key in with_procedures:
        return "a procedure"
    if model.reasonCode or model.reasonReference:
        return "a reason"
    return None
