"""Patient and Encounter to facts: who the summary is about, and the stay it covers."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.patient import Patient

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.episode import encounter_period, encounter_start
from fhir_mapping.json_values import JsonObject, objects_at, string_at, strings_at
from fhir_mapping.mapped import ref
from fhir_mapping.resources import ParsedResource, as_type
from fhir_mapping.scope import Scope
from pipeline.evidence.model import (
    EncounterAttributes,
    Fact,
    OtherEncounter,
    PatientInfoAttributes,
    PersonName,
    stable_id,
)
from pipeline.ingestion.identity import ChartIdentity


def _age(birth: date | None, on: date | None) -> int | None:
    if birth is None or on is None:
        return None
    return on.year - birth.year - ((on.month, on.day) < (birth.month, birth.day))


def _display_name(patient: object) -> str | None:
    for name in getattr(patient, "name", None) or []:
        if name.text:
            return str(name.text)
        parts = [*(name.given or []), name.family or ""]
        joined = " ".join(part for part in parts if part)
        if joined:
            return joined
    return None


def person_name(resource: JsonObject) -> str | None:
    """A person's name as people write it (``Dr. Sandra Box``), from the resource's JSON (an
    EHR's user resource, read for its name alone: it need not validate)."""
    for name in objects_at(resource, "name"):
        if text := (string_at(name, "text") or "").strip():
            return text
        parts = [
            *strings_at(name, "prefix"),
            *strings_at(name, "given"),
            *strings_at(name, "family"),
        ]
        if parts:
            return " ".join(parts)
    return None


def _names(patient: object) -> list[PersonName]:
    """Every name the Patient has (official, maiden, nickname…), ``text`` split when alone."""
    names = []
    for name in getattr(patient, "name", None) or []:
        given = [str(part) for part in name.given or []]
        family = str(name.family) if name.family else None
        if not given and family is None and name.text:
            *given, family = str(name.text).split() or [""]
        names.append(PersonName(given=given, family=family))
    return names


def _identifiers(patient: object) -> list[str]:
    return [
        str(identifier.value)
        for identifier in getattr(patient, "identifier", None) or []
        if identifier.value
    ]


def chart_identity_of(model: Patient) -> ChartIdentity:
    """Who a FHIR Patient is, as documents are compared with it
    (``pipeline.ingestion.identity``)."""
    birth = model.birthDate if isinstance(model.birthDate, date) else None
    return ChartIdentity(
        names=_names(model),
        birth_date=birth,
        identifiers=_identifiers(model),
        gender=model.gender,
    )


def _mrn(patient: object) -> str | None:
    """The identifier typed MR, unless it only repeats the resource's own id (Synthea stamps
    its UUID there): a number the hospital does not use is worse than none."""
    own_id = getattr(patient, "id", None)
    for identifier in getattr(patient, "identifier", None) or []:
        codes = {c.code for c in (identifier.type.coding or [])} if identifier.type else set()
        if "MR" in codes and identifier.value and identifier.value != own_id:
            return str(identifier.value)
    return None


_ATTENDING_ROLES = ("ATND", "PPRF", "PART")


def _attending(encounter: object) -> str | None:
    """The attending: by participant type ATND, else the primary performer, else anyone."""
    participants = getattr(encounter, "participant", None) or []
    for role in _ATTENDING_ROLES:
        for participant in participants:
            codes = {c.code for t in participant.type or [] for c in t.coding or []}
            if role in codes and participant.individual is not None:
                named = participant.individual.display or participant.individual.reference
                return str(named) if named else None
    return None


def _admitted_from(scope: Scope) -> str | None:
    hospitalization = scope.encounter.model.hospitalization
    source = concept_text(hospitalization.admitSource) if hospitalization else None
    if source:
        return source
    admitted = encounter_period(scope.encounter)[0]
    for key, why in scope.episode.items():
        encounter = as_type(scope.index.by_key[key], Encounter)
        kind = encounter.model.class_fhir if encounter is not None else None
        if kind is None or kind.code != "EMER" or encounter is None:
            continue
        # An emergency visit that began by the stay's start and runs into it is the way in as
        # much as one that ended before it (a record opens both at the same minute).
        began = encounter_period(encounter)[0]
        if "before" in why:
            return "the emergency department"
        if "overlaps" in why and began is not None and admitted is not None and began <= admitted:
            return "the emergency department"
    return None


def patient_fact(scope: Scope) -> Fact:
    patient = scope.patient.model
    birth = patient.birthDate if isinstance(patient.birthDate, date) else None
    start = scope.start
    deceased = patient.deceasedBoolean
    if deceased is None and patient.deceasedDateTime is not None:
        deceased = True
    age = _age(birth, start.date() if start else None)
    # An open stay has no discharge yet: its draft gives the age at admission alone.
    at_discharge = _age(birth, scope.end.date() if scope.end else None)
    attributes = PatientInfoAttributes(
        name=_display_name(patient),
        gender=patient.gender,
        birth_date=birth,
        age_at_encounter=age,
        age_at_discharge=at_discharge if at_discharge != age else None,
        deceased=deceased,
        mrn=_mrn(patient),
        names=_names(patient),
        identifiers=_identifiers(patient),
    )
    return Fact(
        id=stable_id("patient", scope.patient.key),
        category="patient_info",
        attributes=attributes,
        sources=[ref(scope.patient, "Patient")],
    )


# A reason code that names what was done or arranged, not why ("Patient transfer to skilled
# nursing facility (procedure)", "Admission to ward", "Check-up", "… requested"), is no reason
# for the stay.
NOT_A_REASON = re.compile(
    r"\((?:procedure|regime/therapy|record artifact)\)$|\btransfer\b|\badmission\b|"
    r"check-?up|\brequested\b|\bencounter for\b|follow-?up",
    re.IGNORECASE,
)


def clinical_reasons(model: object) -> list[Any]:
    """An encounter's reason codes that say why (a problem, a finding), in order."""
    return [
        concept
        for concept in getattr(model, "reasonCode", None) or []
        if (text := concept_text(concept)) and not NOT_A_REASON.search(text)
    ]


def stay_reasons(scope: Scope) -> tuple[list[Any], list[ParsedResource[Encounter]]]:
    """The stay's own clinical reason codes; when it names none, those of an encounter of the
    episode (the emergency visit that led to the admission), with the encounter read."""
    own = clinical_reasons(scope.encounter.model)
    if own:
        return own, []
    for key in scope.episode:
        item = as_type(scope.index.by_key[key], Encounter)
        found = clinical_reasons(item.model) if item is not None else []
        if item is not None and key != scope.encounter.key and found:
            return found, [item]
    return [], []


SKILLED_NURSING = re.compile(r"skilled nursing|nursing (?:home|facility)|\bsnf\b", re.IGNORECASE)


def _facility(encounter: Encounter, types: list[str]) -> tuple[str, str | None]:
    """The kind of place, from the class, the types and the stay's own reasons: a stay coded
    "Patient transfer to skilled nursing facility" is the nursing stay the transfer began (an
    18-day rehabilitation read as a hospital stay for a knee injury). A location whose name
    alone says so ("… DP SNF") is named, not read as the kind of stay: readers of three rounds
    read an inpatient (IMP) stay for sleep apnoea called a nursing stay from its unit's name as
    a wrong label, with the name shown or not."""
    reasons = [concept_text(reason) or "" for reason in encounter.reasonCode or []]
    places = [loc.location.display or "" for loc in encounter.location or []]
    if (encounter.class_fhir and encounter.class_fhir.code == "SNF") or any(
        SKILLED_NURSING.search(text) for text in [*types, *reasons]
    ):
        return "skilled nursing facility", None
    named = [place for place in places if SKILLED_NURSING.search(place)]
    return "hospital", named[0] if named else None


def _other_encounter(item: ParsedResource[Encounter], why: str | None) -> OtherEncounter:
    model = item.model
    return OtherEncounter(
        class_code=model.class_fhir.code if model.class_fhir else None,
        start=as_datetime(model.period.start) if model.period else None,
        end=as_datetime(model.period.end) if model.period else None,
        reasons=[text for text in map(concept_text, model.reasonCode or []) if text],
        types=[text for text in map(concept_text, model.type or []) if text],
        why=why,
    )


def _beside_the_stay(
    scope: Scope,
) -> tuple[list[OtherEncounter], list[OtherEncounter], list[ParsedResource[Encounter]]]:
    """The episode's other encounters, the recent acute care before it, and their resources."""
    joined = [
        (item, why)
        for key, why in scope.episode.items()
        if key != scope.encounter.key
        and (item := as_type(scope.index.by_key[key], Encounter)) is not None
    ]
    joined.sort(key=lambda pair: encounter_start(pair[0]))
    recent = scope.recent_acute_care()
    return (
        [_other_encounter(item, why) for item, why in joined],
        [_other_encounter(item, None) for item in recent],
        [item for item, _ in joined] + recent,
    )


def encounter_fact(scope: Scope) -> Fact:
    encounter = scope.encounter.model
    hospitalization = encounter.hospitalization
    disposition = concept_text(hospitalization.dischargeDisposition) if hospitalization else None
    concepts, read_from = stay_reasons(scope)
    reasons = [text for text in map(concept_text, concepts) if text]
    types = [text for text in map(concept_text, encounter.type or []) if text]
    start = as_datetime(encounter.period.start) if encounter.period else None
    end = as_datetime(encounter.period.end) if encounter.period else None
    # The episode's start, when it was an earlier day than the stay's (the surgery the day before).
    episode_start = (
        scope.start if scope.start and start and scope.start.date() < start.date() else None
    )
    joined, recent, beside = _beside_the_stay(scope)
    said = [text for text in map(concept_text, encounter.reasonCode or []) if text]
    arranged = [text for text in said if NOT_A_REASON.search(text)]
    facility, facility_location = _facility(encounter, types)
    attributes = EncounterAttributes(
        kind="stay",
        class_code=encounter.class_fhir.code if encounter.class_fhir else None,
        types=types,
        start=start,
        end=end,
        length_of_stay_days=(end.date() - start.date()).days if start and end else None,
        episode_start=episode_start,
        episode_days=(end.date() - episode_start.date()).days if episode_start and end else None,
        facility=facility,
        facility_location=facility_location,
        reasons=reasons,
        arranged_reasons=arranged,
        reasons_from=_other_encounter(read_from[0], None) if read_from and arranged else None,
        discharge_disposition=disposition,
        attending=_attending(encounter),
        admitted_from=_admitted_from(scope),
        joined=joined,
        recent_acute_care=recent,
    )
    return Fact(
        id=stable_id("encounter", scope.encounter.key),
        category="encounter",
        attributes=attributes,
        sources=[ref(scope.encounter, "Encounter")]
        + [ref(item, "Encounter.reasonCode") for item in read_from]
        + [ref(item, "Encounter") for item in beside if item not in read_from],
    )
