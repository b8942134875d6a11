"""Condition, AllergyIntolerance and Procedure to facts, within the scope of one stay."""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.allergyintolerance import AllergyIntolerance
from fhir.resources.R4B.condition import Condition
from fhir.resources.R4B.procedure import Procedure

from fhir_mapping.codes import as_datetime, code_of, concept_text, first_coding
from fhir_mapping.demographics import stay_reasons
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import (
    AllergyAttributes,
    DiagnosisAttributes,
    ProcedureAttributes,
)

_VOID_VERIFICATION = frozenset({"refuted", "entered-in-error"})
_ACTIVE_CLINICAL = frozenset({"active", "recurrence", "relapse"})


_PRINCIPAL_ROLES = frozenset({"DD", "AD"})


def _statuses_of_record(
    mapped: Mapped, item: ParsedResource[Condition] | ParsedResource[AllergyIntolerance]
) -> tuple[str | None, str | None] | None:
    """A problem's or an allergy's verification and clinical statuses; None, the exclusion
    recorded, when it was refuted or entered in error (it was never the patient's)."""
    verification = code_of(item.model.verificationStatus)
    if verification in _VOID_VERIFICATION:
        mapped.exclude(item, "status", f"verification status is {verification}")
        return None
    return verification, code_of(item.model.clinicalStatus)


def _principal(scope: Scope) -> tuple[set[str], set[str]]:
    """The stay's reason: Condition keys it names, and codes it gives (reasonCode)."""
    stay = scope.encounter.model
    keys = {
        key
        for reference in stay.reasonReference or []
        if (key := scope.index.resolve_key(reference.reference))
    }
    for diagnosis in stay.diagnosis or []:
        roles = {coding.code for coding in (diagnosis.use.coding or [])} if diagnosis.use else set()
        if diagnosis.rank == 1 or roles & _PRINCIPAL_ROLES:
            key = scope.index.resolve_key(diagnosis.condition.reference)
            if key:
                keys.add(key)
    codes = {
        coding.code
        for concept in stay_reasons(scope)[0]
        for coding in concept.coding or []
        if coding.code
    }
    return keys, codes


def onset_and_abatement(condition: Condition) -> tuple[datetime | None, datetime | None]:
    onset = as_datetime(
        condition.onsetDateTime
        or (condition.onsetPeriod.start if condition.onsetPeriod else None)
        or condition.recordedDate
    )
    abatement = as_datetime(
        condition.abatementDateTime
        or (condition.abatementPeriod.end if condition.abatementPeriod else None)
    )
    return onset, abatement


def _inactive_during_stay(
    scope: Scope, onset: datetime | None, abatement: datetime | None, clinical: str | None
) -> str | None:
    """Why a problem not recorded against the stay was not active during it, or None if it was:
    it must have begun before the stay ended and still be active when it began."""
    began_before_end = onset is not None and onset <= scope.as_of
    if abatement is not None:
        still_active = scope.start is not None and abatement >= scope.start
    else:
        still_active = clinical in _ACTIVE_CLINICAL
    if began_before_end and still_active:
        return None
    return f"onset {onset.isoformat() if onset else 'unknown'}, " + (
        f"abated {abatement.isoformat()}" if abatement else f"status {clinical}"
    )


def map_conditions(scope: Scope) -> Mapped:
    """Encounter diagnoses, and other problems active at some time during the stay."""
    mapped = Mapped()
    principal_keys, principal_codes = _principal(scope)
    for item in scope.of_patient(Condition):
        condition = item.model
        if (statuses := _statuses_of_record(mapped, item)) is None:
            continue
        verification, clinical = statuses
        onset, abatement = onset_and_abatement(condition)
        if scope.after_discharge(onset):
            mapped.exclude(item, "out_of_scope", f"onset {onset.isoformat()}, after discharge")
            continue
        if scope.after_discharge(abatement):
            # Read as of discharge: a condition resolved later was active then.
            clinical, abatement = "active", None
        if scope.is_encounter(condition.encounter):
            role = "encounter_diagnosis"
        elif inactive := _inactive_during_stay(scope, onset, abatement, clinical):
            mapped.exclude(item, "out_of_scope", f"not active during the stay ({inactive})")
            continue
        else:
            role = "active_problem"
        display = concept_text(condition.code) or "condition not named"
        code = first_coding(condition.code)
        principal = item.key in principal_keys or (
            code is not None and code.code in principal_codes
        )
        mapped.add(
            "diagnosis",
            item,
            DiagnosisAttributes(
                display=display,
                code=code,
                role=role,
                principal=principal,
                clinical_status=clinical,
                verification_status=verification,
                onset=onset,
                abatement=abatement,
            ),
            "code",
        )
    return mapped


def map_allergies(scope: Scope) -> Mapped:
    """Allergies recorded by the end of the stay and not refuted, inactive or resolved."""
    mapped = Mapped()
    for item in scope.of_patient(AllergyIntolerance):
        allergy = item.model
        if (statuses := _statuses_of_record(mapped, item)) is None:
            continue
        verification, clinical = statuses
        if clinical in {"inactive", "resolved"}:
            mapped.exclude(item, "status", f"clinical status is {clinical}")
            continue
        recorded = as_datetime(allergy.recordedDate or allergy.onsetDateTime)
        if scope.after_discharge(recorded):
            mapped.exclude(item, "out_of_scope", f"recorded {recorded.isoformat()}, after the stay")
            continue
        reactions = allergy.reaction or []
        substance = concept_text(allergy.code) or next(
            (text for text in (concept_text(r.substance) for r in reactions) if text), None
        )
        manifestations = [
            text
            for reaction in reactions
            for text in map(concept_text, reaction.manifestation or [])
            if text
        ]
        mapped.add(
            "allergy",
            item,
            AllergyAttributes(
                substance=substance or "substance not documented",
                code=first_coding(allergy.code),
                reactions=manifestations,
                criticality=allergy.criticality,
                clinical_status=clinical,
                verification_status=verification,
            ),
            "code",
        )
    return mapped


def performed(procedure: Procedure) -> tuple[datetime | None, datetime | None]:
    """When a Procedure was performed: (start, end), from its time or its period."""
    period = procedure.performedPeriod
    start = as_datetime(procedure.performedDateTime or (period.start if period else None))
    return start, as_datetime(period.end) if period else None


def map_procedures(scope: Scope) -> Mapped:
    """Procedures performed in the stay: by encounter reference, else by performed time."""
    mapped = Mapped()
    for item in scope.of_patient(Procedure):
        procedure = item.model
        start, end = performed(procedure)
        if not scope.in_stay(procedure.encounter, start) or scope.after_discharge(end):
            when = start.isoformat() if start else "no time documented"
            mapped.exclude(item, "out_of_scope", f"not performed in the stay ({when})")
            continue
        if procedure.status in {"not-done", "entered-in-error"}:
            mapped.exclude(item, "status", f"status is {procedure.status}")
            continue
        mapped.add(
            "procedure",
            item,
            ProcedureAttributes(
                name=concept_text(procedure.code) or "procedure not named",
                code=first_coding(procedure.code),
                status=procedure.status,
                performed_start=start,
                performed_end=end,
            ),
            "code",
        )
    return mapped
