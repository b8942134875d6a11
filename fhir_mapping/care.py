"""Care after discharge and care given in the episode: CarePlans (``fhir_mapping.care_plans``),
ServiceRequests, Appointments, Immunizations, MedicationAdministrations and ImagingStudies (with
imaging report conclusions). A test ordered in the stay and not answered yet is a pending result
(``fhir_mapping.awaited_tests``).

A service request or an appointment belongs to the follow-up when it is active and falls after
discharge. Vaccines, medications given and imaging studies belong to the episode by its
encounters, else by their time.
"""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.appointment import Appointment
from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from fhir.resources.R4B.imagingstudy import ImagingStudy
from fhir.resources.R4B.immunization import Immunization
from fhir.resources.R4B.medication import Medication
from fhir.resources.R4B.medicationadministration import MedicationAdministration
from fhir.resources.R4B.servicerequest import ServiceRequest

from fhir_mapping.awaited_tests import open_test_orders
from fhir_mapping.care_plans import map_care_plans
from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import (
    AdministrationAttributes,
    CarePlanAttributes,
    ImagingAttributes,
)

_GIVEN = frozenset({"completed", "in-progress"})
_IMAGING_CATEGORIES = frozenset({"RAD", "imaging", "LP29684-5"})


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
    pending_keys = set()
    for order, pending in open_test_orders(scope):
        mapped.add("pending", order, pending, "status")
        pending_keys.add(order.key)
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
        if plan is None or item.key in pending_keys:
            continue
        when, title = plan
        status = item.model.status
        upcoming = status in {"active", "booked", "pending", "proposed", "arrived"}
        if not upcoming or when is None or not scope.after_discharge(when):
            mapped.exclude(item, "out_of_scope", "not planned for after discharge")
            continue
        mapped.add(
            kind,
            item,
            CarePlanAttributes(
                kind=kind, title=title or kind.replace("_", " "), status=status, when=when
            ),
            "code" if kind == "service_request" else "start",
        )


def _administrations(scope: Scope, mapped: Mapped) -> None:
    for item in scope.of_patient(Immunization):
        vaccine = item.model
        when = as_datetime(vaccine.occurrenceDateTime)
        if vaccine.status not in _GIVEN or not scope.in_stay(vaccine.encounter, when):
            continue
        mapped.add(
            "immunization",
            item,
            AdministrationAttributes(
                kind="immunization",
                name=concept_text(vaccine.vaccineCode) or "vaccine not named",
                status=vaccine.status,
                when=when,
            ),
            "vaccineCode",
        )
    for administration in scope.of_patient(MedicationAdministration):
        given = administration.model
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
        mapped.add(
            "administration",
            administration,
            AdministrationAttributes(
                kind="medication",
                name=concept_text(concept) or "medication not named",
                status=given.status,
                when=when,
            ),
            "medicationCodeableConcept"
            if given.medicationCodeableConcept
            else "medicationReference",
        )


def _imaging(scope: Scope, mapped: Mapped) -> None:
    for item in scope.of_patient(ImagingStudy):
        study = item.model
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
        mapped.add(
            "imaging",
            item,
            ImagingAttributes(name=name, modality=modality, started=started),
            "procedureCode",
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
        mapped.add(
            "imaging",
            report_item,
            ImagingAttributes(
                name=concept_text(report.code) or "imaging report",
                started=effective,
                conclusion=report.conclusion,
            ),
            "conclusion",
        )


def map_care(scope: Scope) -> Mapped:
    mapped = map_care_plans(scope)
    _requests(scope, mapped)
    _administrations(scope, mapped)
    _imaging(scope, mapped)
    return mapped
