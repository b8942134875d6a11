"""Which patient and which hospitalization a summary is about, and what falls inside it.

Default encounter: the most recent inpatient stay (class IMP, ACUTE or NONAC), else the most recent
encounter of any class; an explicit encounter id overrides. The hospitalization is an **episode**
(``fhir_mapping.episode``: the stay and the encounters that belong to it). A resource belongs to
the episode when it references one of its encounters, or, where it references none, when its own
time falls inside the episode. Everything is read **as of discharge** (the stay's ``period.end``;
now for a stay still open): nothing dated after discharge belongs to the episode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TypeGuard

from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.patient import Patient
from fhir.resources.R4B.reference import Reference

from fhir_mapping.codes import as_datetime
from fhir_mapping.episode import (
    ACUTE_CARE_CLASSES,
    READMISSION,
    encounter_class,
    encounter_period,
    encounter_start,
    episode_of,
    refers_to,
)
from fhir_mapping.resources import (
    EvidenceInputError,
    ParsedResource,
    ResourceIndex,
    TypedResourceT,
    as_type,
    relative_key,
)
from pipeline.evidence.mapped import (
    EPISODE_WINDOW_H,
    INPATIENT_CLASSES,
    RECENT_ACUTE_CARE_DAYS,
)


def patient_of(resource: object) -> Reference | None:
    """The patient a resource is about: its ``subject`` (most kinds) or its ``patient``
    (Immunization, AllergyIntolerance, Device, SupplyDelivery)."""
    for element in ("subject", "patient"):
        reference = getattr(resource, element, None)
        if isinstance(reference, Reference):
            return reference
    return None


@dataclass(frozen=True, slots=True)
class Scope:
    index: ResourceIndex
    patient: ParsedResource[Patient]
    # The inpatient encounter the summary is about (its discharge ends the episode).
    encounter: ParsedResource[Encounter]
    # Every encounter of the episode, the stay's own first, and why each belongs to it.
    episode: dict[str, str] = field(default_factory=dict)

    def _earliest_start(self, keys: Iterable[str]) -> datetime | None:
        starts = [
            start
            for key in keys
            if (encounter := as_type(self.index.by_key[key], Encounter)) is not None
            and (start := encounter_period(encounter)[0]) is not None
        ]
        return min(starts) if starts else None

    @property
    def start(self) -> datetime | None:
        """When the episode began: the earliest start of its encounters."""
        return self._earliest_start(self.episode or {self.encounter.key: ""})

    @property
    def earlier_stays(self) -> frozenset[str]:
        """The inpatient stays joined as the one before a readmission."""
        return frozenset(key for key, why in self.episode.items() if why == READMISSION)

    @property
    def measured_from(self) -> datetime | None:
        """When the stay's own measurements begin: the episode's start without a readmission's
        earlier stay, whose results and vital signs are the patient's values before this stay
        (the readmission's admission oxygen saturation is its own, not the last stay's)."""
        own = [
            key for key in self.episode or {self.encounter.key: ""} if key not in self.earlier_stays
        ]
        return self._earliest_start(own)

    @property
    def end(self) -> datetime | None:
        """Discharge: the stay's own end (None while it is open)."""
        return encounter_period(self.encounter)[1]

    @property
    def as_of(self) -> datetime:
        """The moment the record is read at: discharge, or now for a stay still open."""
        return self.end or datetime.now(UTC)

    def before_episode(self, moment: datetime | None) -> TypeGuard[datetime]:
        """Dated before the episode began (a baseline value, an earlier order)."""
        return moment is not None and self.start is not None and moment < self.start

    def after_discharge(self, moment: datetime | None) -> TypeGuard[datetime]:
        return moment is not None and moment > self.as_of

    def is_patient(self, reference: Reference | None) -> bool:
        """Whether a Reference points at this patient; a missing subject is not this patient."""
        return refers_to(self.index, reference, self.patient.key)

    def of_patient(self, kind: type[TypedResourceT]) -> list[ParsedResource[TypedResourceT]]:
        """The resources of one type that are this patient's: a bundle may hold a relative's or
        another patient's, and a resource that names no patient is no one's."""
        return [
            item for item in self.index.of_type(kind) if self.is_patient(patient_of(item.model))
        ]

    def is_encounter(self, reference: Reference | None) -> bool:
        """Whether a Reference points at an encounter of the episode."""
        if reference is None or not reference.reference:
            return False
        key = self.index.resolve_key(reference.reference)
        return key == self.encounter.key or key in self.episode

    def before_measured(self, moment: datetime | None) -> TypeGuard[datetime]:
        """Dated before the stay's own measurements (a baseline result)."""
        start = self.measured_from
        return moment is not None and start is not None and moment < start

    def measured_in_stay(self, encounter: Reference | None, moment: date | str | None) -> bool:
        """A result or vital sign of the stay's own: as ``in_stay``, but not one of a
        readmission's earlier stay, by its encounter or, where it references none, its time."""
        if encounter is not None and encounter.reference:
            earlier = self.index.resolve_key(encounter.reference) in self.earlier_stays
            return not earlier and self.in_stay(encounter, moment)
        when = as_datetime(moment)
        return self.during_stay(when) and not self.before_measured(when)

    def during_stay(self, moment: datetime | None) -> bool:
        if moment is None or self.start is None:
            return False
        return self.start <= moment <= self.as_of

    def in_stay(self, encounter: Reference | None, moment: date | str | None) -> bool:
        """By the encounter a resource references (if not dated after discharge); by its time
        only where it references none."""
        when = as_datetime(moment)
        if encounter is not None and encounter.reference:
            return self.is_encounter(encounter) and not self.after_discharge(when)
        return self.during_stay(when)

    def recent_acute_care(self) -> list[ParsedResource[Encounter]]:
        """The patient's emergency visits and inpatient stays outside the episode that ended
        within ``RECENT_ACUTE_CARE_DAYS`` before it began, oldest first."""
        start = self.start
        if start is None:
            return []
        since = start - timedelta(days=RECENT_ACUTE_CARE_DAYS)
        found = [
            item
            for item in self.index.of_type(Encounter)
            if item.key not in self.episode
            and item.key != self.encounter.key
            and encounter_class(item) in ACUTE_CARE_CLASSES
            and self.is_patient(item.model.subject)
            and (ended := encounter_period(item)[1]) is not None
            and since <= ended < start
        ]
        return sorted(found, key=encounter_start)


def _patient_for(
    index: ResourceIndex, encounter: ParsedResource[Encounter] | None
) -> ParsedResource[Patient]:
    patients = index.of_type(Patient)
    if encounter is not None and encounter.model.subject is not None:
        key = index.resolve_key(encounter.model.subject.reference)
        if key is not None and (patient := as_type(index.by_key[key], Patient)) is not None:
            return patient
    if not patients:
        raise EvidenceInputError("no Patient resource in the input")
    if len(patients) > 1:
        raise EvidenceInputError(
            f"the input holds {len(patients)} patients; choose one with an encounter id"
        )
    return patients[0]


def _find_encounter(index: ResourceIndex, requested: str) -> ParsedResource[Encounter]:
    wanted = requested.removeprefix("urn:uuid:")
    candidates = [wanted, f"Encounter/{wanted}", relative_key(requested)]
    found = [index.by_key[key] for key in candidates if key in index.by_key]
    if requested in index.by_url:
        found.append(index.by_url[requested])
    for item in found:
        if (encounter := as_type(item, Encounter)) is not None:
            return encounter
    raise EvidenceInputError(f"encounter {requested!r} is not in the input")


def choose_scope(
    index: ResourceIndex, encounter_id: str | None = None, window_h: float = EPISODE_WINDOW_H
) -> Scope:
    """The patient and episode to summarise; raises EvidenceInputError when there is none."""
    window = timedelta(hours=window_h)
    if encounter_id:
        encounter = _find_encounter(index, encounter_id)
        patient = _patient_for(index, encounter)
        return Scope(index, patient, encounter, episode_of(index, patient, encounter, window))
    patient = _patient_for(index, None)
    encounters = [
        item
        for item in index.of_type(Encounter)
        if refers_to(index, item.model.subject, patient.key)
    ]
    if not encounters:
        raise EvidenceInputError(f"no Encounter of {patient.key} in the input")
    inpatient = [
        item
        for item in encounters
        if item.model.class_fhir is not None and item.model.class_fhir.code in INPATIENT_CLASSES
    ]
    chosen = max(inpatient or encounters, key=encounter_start)
    return Scope(index, patient, chosen, episode_of(index, patient, chosen, window))
