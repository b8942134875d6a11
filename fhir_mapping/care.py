"""Care after discharge and care given in the episode: CarePlans, ServiceRequests, Appointments,
Immunizations, MedicationAdministrations and ImagingStudies (with imaging report conclusions).

A care plan belongs to the follow-up when it is one of the episode's (it references one of its
encounters, or began during the episode) and is active at discharge, or when it is active and
addresses the stay's reason, whenever it began: the ongoing plan for what brought the patient
in. A service request or an appointment belongs there when it is active and falls after
discharge. Vaccines, medications
given and imaging studies belong to the episode by its encounters, else by their time.
"""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.appointment import Appointment
from fhir.resources.R4B.careplan import CarePlan
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.condition import Condition
from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from fhir.resources.R4B.goal import Goal
from fhir.resources.R4B.imagingstudy import ImagingStudy
from fhir.resources.R4B.immunization import Immunization
from fhir.resources.R4B.medication import Medication
from fhir.resources.R4B.medicationadministration import MedicationAdministration
from fhir.resources.R4B.servicerequest import ServiceRequest

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.episode import reasons_of
from fhir_mapping.mapped import Mapped, ref
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import (
    AdministrationAttributes,
    CarePlanAttributes,
    Fact,
    ImagingAttributes,
    stable_id,
)

_ACTIVE = frozenset({"active", "on-hold", "draft"})
_GIVEN = frozenset({"completed", "in-progress"})
_IMAGING_CATEGORIES = frozenset({"RAD", "imaging", "LP29684-5"})


def _code_of(condition: Condition | None) -> CodeableConcept | None:
    return condition.code if condition is not None else None


def _for_the_stays_reason(scope: Scope, plan: CarePlan) -> bool:
    """Whether the plan addresses a condition that is the stay's reason (by code or text)."""
    reasons = reasons_of(scope.encounter)
    for reference in plan.addresses or []:
        condition = scope.index.resolve(reference.reference, Condition)
        concept = condition.code if condition is not None else None
        said = (
            {(c.code or c.display or "").lower() for c in (concept.coding or [])}
            if concept
            else set()
        )
        if concept is not None and concept.text:
            said.add(concept.text.lower())
        if said & reasons:
            return True
    return False


def _care_plans(scope: Scope, mapped: Mapped) -> None:
    for item in scope.index.of_type(CarePlan):
        plan = item.model
        if not scope.is_patient(plan.subject):
            continue
        start = as_datetime(plan.period.start) if plan.period else None
        end = as_datetime(plan.period.end) if plan.period else None
        ongoing = plan.status in _ACTIVE and _for_the_stays_reason(scope, plan)
        ours = scope.is_encounter(plan.encounter) or scope.during_stay(start) or ongoing
        active = plan.status in _ACTIVE or (end is not None and scope.after_discharge(end))
        if not ours or not active or scope.after_discharge(start):
            mapped.exclude(item, "out_of_scope", "not a care plan of this stay active at discharge")
            continue
        title = (
            next(
                (text for text in map(concept_text, plan.category or []) if text and " " in text),
                None,
            )
            or plan.title
            or "care plan"
        )
        activities = list(
            dict.fromkeys(
                text
                for activity in plan.activity or []
                if activity.detail is not None and (text := concept_text(activity.detail.code))
            )
        )
        addresses = [
            text
            for reference in plan.addresses or []
            if (
                text := reference.display
                or concept_text(_code_of(scope.index.resolve(reference.reference, Condition)))
            )
        ]
        goals = [
            text
            for reference in plan.goal or []
            if (goal := scope.index.resolve(reference.reference, Goal)) is not None
            and (text := concept_text(goal.description))
        ]
        mapped.facts.append(
            Fact(
                id=stable_id("careplan", item.key),
                category="care_plan",
                attributes=CarePlanAttributes(
                    kind="care_plan",
                    title=title,
                    status=plan.status,
                    activities=activities,
                    addresses=addresses,
                    goals=goals,
                    when=start,
                    before_stay=scope.before_episode(start),
                ),
                sources=[ref(item, "category")],
            )
        )


# When and what a request or appointment plans, or None when it is not this patient's.
Planned = tuple[datetime | None, str | None] | None


def _service_request(scope: Scope, model: ServiceRequest) -> Planned:
    if not scope.is_patient(model.subject):
        return None
    return as_datetime(model.occurrenceDateTime or model.authoredOn), concept_text(model.code)


def _appointment(scope: Scope, model: Appointment) -> Planned:
    actors = [p.actor for p in model.participant or [] if p.actor is not None]
    if not any(scope.is_patient(actor) for actor in actors):
        return None
    title = (
        model.description
        or concept_text(next(iter(model.serviceType or []), None))
        or concept_text(model.appointmentType)
    )
    return as_datetime(model.start), title


def _requests(scope: Scope, mapped: Mapped) -> None:
    planned: list[tuple[str, ParsedResource[ServiceRequest | Appointment], Planned]] = [
        *(
            ("service_request", item, _service_request(scope, item.model))
            for item in scope.index.of_type(ServiceRequest)
        ),
        *(
            ("appointment", item, _appointment(scope, item.model))
            for item in scope.index.of_type(Appointment)
        ),
    ]
    for kind, item, plan in planned:
        if plan is None:
            continue
        when, title = plan
        status = item.model.status
        upcoming = status in {"active", "booked", "pending", "proposed", "arrived"}
        if not upcoming or when is None or not scope.after_discharge(when):
            mapped.exclude(item, "out_of_scope", "not planned for after discharge")
            continue
        mapped.facts.append(
            Fact(
                id=stable_id(kind, item.key),
                category="care_plan",
                attributes=CarePlanAttributes(
                    kind=kind, title=title or kind.replace("_", " "), status=status, when=when
                ),
                sources=[ref(item, "code" if kind == "service_request" else "start")],
            )
        )


def _administrations(scope: Scope, mapped: Mapped) -> None:
    for item in scope.index.of_type(Immunization):
        vaccine = item.model
        if not scope.is_patient(vaccine.patient):
            continue
        when = as_datetime(vaccine.occurrenceDateTime)
        if vaccine.status not in _GIVEN or not scope.in_stay(vaccine.encounter, when):
            continue
        mapped.facts.append(
            Fact(
                id=stable_id("immunization", item.key),
                category="administration",
                attributes=AdministrationAttributes(
                    kind="immunization",
                    name=concept_text(vaccine.vaccineCode) or "vaccine not named",
                    status=vaccine.status,
                    when=when,
                ),
                sources=[ref(item, "vaccineCode")],
            )
        )
    for administration in scope.index.of_type(MedicationAdministration):
        given = administration.model
        if not scope.is_patient(given.subject):
            continue
        when = as_datetime(
            given.effectiveDateTime
            or (given.effectivePeriod.start if given.effectivePeriod else None)
        )
        if given.status not in _GIVEN or not scope.in_stay(given.context, when):
            continue
        concept = given.medicationCodeableConcept
        if concept is None and given.medicationReference is not None:
            medication = scope.index.resolve(given.medicationReference.reference, Medication)
            concept = medication.code if medication is not None else None
        mapped.facts.append(
            Fact(
                id=stable_id("administration", administration.key),
                category="administration",
                attributes=AdministrationAttributes(
                    kind="medication",
                    name=concept_text(concept) or "medication not named",
                    status=given.status,
                    when=when,
                ),
                sources=[
                    ref(
                        administration,
                        "medicationCodeableConcept"
                        if given.medicationCodeableConcept
                        else "medicationReference",
                    )
                ],
            )
        )


def _imaging(scope: Scope, mapped: Mapped) -> None:
    for item in scope.index.of_type(ImagingStudy):
        study = item.model
        if not scope.is_patient(study.subject):
            continue
        started = as_datetime(study.started)
        if study.status in {"cancelled", "entered-in-error"} or not scope.in_stay(
            study.encounter, started
        ):
            continue
        name = next(
            (text for text in map(concept_text, study.procedureCode or []) if text),
            study.description or "imaging study",
        )
        modality = next((coding.display or coding.code for coding in study.modality or []), None)
        mapped.facts.append(
            Fact(
                id=stable_id("imaging", item.key),
                category="imaging",
                attributes=ImagingAttributes(name=name, modality=modality, started=started),
                sources=[ref(item, "procedureCode")],
            )
        )
    for report_item in scope.index.of_type(DiagnosticReport):
        report = report_item.model
        codes = {
            coding.code for concept in report.category or [] for coding in concept.coding or []
        }
        effective = as_datetime(
            report.effectiveDateTime
            or (report.effectivePeriod.start if report.effectivePeriod else None)
        )
        if (
            not codes & _IMAGING_CATEGORIES
            or not report.conclusion
            or not scope.is_patient(report.subject)
            or not scope.in_stay(report.encounter, effective or report.issued)
        ):
            continue
        mapped.facts.append(
            Fact(
                id=stable_id("imaging", report_item.key),
                category="imaging",
                attributes=ImagingAttributes(
                    name=concept_text(report.code) or "imaging report",
                    started=effective,
                    conclusion=report.conclusion,
                ),
                sources=[ref(report_item, "conclusion")],
            )
        )


def map_care(scope: Scope) -> Mapped:
    mapped = Mapped()
    _care_plans(scope, mapped)
    _requests(scope, mapped)
    _administrations(scope, mapped)
    _imaging(scope, mapped)
    return mapped
