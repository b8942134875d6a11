"""Which patient and which encounter a summary is about, and what falls inside that stay.

Default encounter: the most recent inpatient stay (class IMP, ACUTE or NONAC), else the most recent
encounter of any class; an explicit encounter id overrides. A resource belongs to the stay when it
references the encounter, or, where it references none, when its own time falls inside the period.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fhir_mapping.codes import as_datetime
from fhir_mapping.resources import EvidenceInputError, ParsedResource, ResourceIndex, relative_key

INPATIENT_CLASSES = frozenset({"IMP", "ACUTE", "NONAC"})


@dataclass(frozen=True, slots=True)
class Scope:
    index: ResourceIndex
    patient: ParsedResource
    encounter: ParsedResource

    @property
    def start(self) -> datetime | None:
        period = self.encounter.model.period
        return as_datetime(period.start) if period is not None else None

    @property
    def end(self) -> datetime | None:
        period = self.encounter.model.period
        return as_datetime(period.end) if period is not None else None

    def is_patient(self, reference: Any) -> bool:
        """Whether a Reference points at this patient; a missing subject is not this patient."""
        if reference is None or not reference.reference:
            return False
        return self.index.resolve_key(reference.reference) == self.patient.key

    def is_encounter(self, reference: Any) -> bool:
        if reference is None or not reference.reference:
            return False
        return self.index.resolve_key(reference.reference) == self.encounter.key

    def during_stay(self, moment: datetime | None) -> bool:
        if moment is None or self.start is None:
            return False
        return self.start <= moment and (self.end is None or moment <= self.end)

    def in_stay(self, encounter: Any, moment: Any) -> bool:
        """By the encounter a resource references; by its time only where it references none."""
        if encounter is not None and encounter.reference:
            return self.is_encounter(encounter)
        return self.during_stay(as_datetime(moment))

    def describe_period(self) -> str:
        start = self.start.isoformat() if self.start else "?"
        end = self.end.isoformat() if self.end else "ongoing"
        return f"{start} to {end}"


def _encounter_start(encounter: ParsedResource) -> datetime:
    period = encounter.model.period
    start = as_datetime(period.start) if period is not None else None
    return start or datetime.min.replace(tzinfo=UTC)


def _patient_for(index: ResourceIndex, encounter: ParsedResource | None) -> ParsedResource:
    patients = index.of_type("Patient")
    if encounter is not None and encounter.model.subject is not None:
        key = index.resolve_key(encounter.model.subject.reference)
        if key is not None:
            return index.by_key[key]
    if not patients:
        raise EvidenceInputError("no Patient resource in the input")
    if len(patients) > 1:
        raise EvidenceInputError(
            f"the input holds {len(patients)} patients; choose one with an encounter id"
        )
    return patients[0]


def _find_encounter(index: ResourceIndex, requested: str) -> ParsedResource:
    wanted = requested.removeprefix("urn:uuid:")
    candidates = [wanted, f"Encounter/{wanted}", relative_key(requested)]
    for key in candidates:
        if key in index.by_key and index.by_key[key].resource_type == "Encounter":
            return index.by_key[key]
    if requested in index.by_url:
        return index.by_url[requested]
    raise EvidenceInputError(f"encounter {requested!r} is not in the input")


def choose_scope(index: ResourceIndex, encounter_id: str | None = None) -> Scope:
    """The patient and encounter to summarise; raises EvidenceInputError when there is none."""
    if encounter_id:
        encounter = _find_encounter(index, encounter_id)
        return Scope(index, _patient_for(index, encounter), encounter)
    patient = _patient_for(index, None)
    probe = Scope(index, patient, patient)
    encounters = [
        item for item in index.of_type("Encounter") if probe.is_patient(item.model.subject)
    ]
    if not encounters:
        raise EvidenceInputError(f"no Encounter of {patient.key} in the input")
    inpatient = [
        item
        for item in encounters
        if item.model.class_fhir is not None and item.model.class_fhir.code in INPATIENT_CLASSES
    ]
    chosen = max(inpatient or encounters, key=_encounter_start)
    return Scope(index, patient, chosen)
