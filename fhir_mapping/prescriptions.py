"""Ended prescriptions of the year before the episode: the record's last word on how a home drug
was taken.

A note lists the patient's home drugs with no dose ("oxycodone 10 mg"); the orders that last
prescribed them were completed months before the stay, so the medication mapping leaves them out
as historical, never current. The best possible medication history (WHO High 5s medication
reconciliation; ISMP Canada) still reads them: each drug's latest ended prescription within
``PRESCRIPTION_HISTORY_DAYS`` before the episode, with its dosage, is a fact of its own kind,
which only says how the drug was last prescribed. A prescription that a clinician gave at the
visit that wrote it (a MedicationAdministration of the drug in the order's encounter: a dentist's
fluoride gel, an injection in the office) is kept too, marked so, dosage or not: it is an office
treatment, never a home drug, though later notes' lists carry its name. So is a finished course:
a prescription completed for an illness (its reasonReference) that resolved before the episode,
such as a cough syrup for a bronchitis: later notes' lists carry its name too, but no one takes
it at home.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.condition import Condition
from fhir.resources.R4B.medication import Medication
from fhir.resources.R4B.medicationadministration import MedicationAdministration
from fhir.resources.R4B.medicationrequest import MedicationRequest
from fhir.resources.R4B.reference import Reference

from fhir_mapping.clinical import onset_and_abatement
from fhir_mapping.codes import as_datetime, concept_text, reference_of
from fhir_mapping.dosage import dosage_attributes
from fhir_mapping.episode import encounter_period
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.mapped import PRESCRIPTION_HISTORY_DAYS
from pipeline.evidence.model import PrescriptionAttributes

_ENDED = frozenset({"completed", "stopped"})


def map_prescriptions(scope: Scope) -> Mapped:
    """Each drug's latest ended prescription, authored within the window before the episode,
    that says how it was taken (a dose or a frequency), that was given at its visit, or whose
    illness resolved before the episode (a finished course)."""
    mapped = Mapped()
    admitted = encounter_period(scope.encounter)[0]
    if admitted is None:
        return mapped
    # Counted from the stay's own admission, as the pull's look-back is.
    since = admitted - timedelta(days=PRESCRIPTION_HISTORY_DAYS)
    latest: dict[str, tuple[ParsedResource[MedicationRequest], PrescriptionAttributes]] = {}
    given = _given_at_visits(scope)
    for item in scope.index.of_type(MedicationRequest):
        request = item.model
        authored = as_datetime(request.authoredOn)
        name = _drug_name(scope, request.medicationCodeableConcept, request.medicationReference)
        if (
            name is None
            or request.status not in _ENDED
            or not scope.is_patient(request.subject)
            or not scope.before_episode(authored)
            or authored < since
        ):
            continue
        dosage = request.dosageInstruction[0] if request.dosageInstruction else None
        how = dosage_attributes(dosage, name)
        at_visit = (reference_of(request.encounter), name.lower()) in given
        course = _resolved_reason(scope, item) if request.status == "completed" else None
        if not (how["dose"] or how["frequency"] or at_visit or course):
            continue
        attributes = PrescriptionAttributes(
            name=name,
            dose=how["dose"],
            frequency=how["frequency"],
            as_needed=how["as_needed"],
            dosage_text=how["dosage_text"],
            units_per_day=how["units_per_day"],
            authored_on=authored,
            status=request.status,
            given_at_visit=at_visit,
            course_for=course[0] if course else None,
            course_ended=course[1] if course else None,
        )
        seen = latest.get(name.lower())
        if seen is None or seen[1].authored_on < authored:
            latest[name.lower()] = (item, attributes)
    for item, attributes in latest.values():
        mapped.add("prescription", item, attributes, "dosageInstruction")
    return mapped


def _drug_name(
    scope: Scope, concept: CodeableConcept | None, reference: Reference | None
) -> str | None:
    """The drug's name, from its code or the Medication it references."""
    if concept is None and reference is not None:
        medication = scope.index.resolve(reference.reference, Medication)
        concept = medication.code if medication is not None else None
    return concept_text(concept)


def _resolved_reason(
    scope: Scope, item: ParsedResource[MedicationRequest]
) -> tuple[str, datetime] | None:
    """The illness a prescription was written for and when it resolved, where it resolved before
    the episode began; None while it lasts (or the record gives no reason)."""
    for reason in item.model.reasonReference or []:
        condition = scope.index.resolve(reason.reference, Condition, item)
        if condition is None:
            continue
        abatement = onset_and_abatement(condition)[1]
        name = concept_text(condition.code)
        if name and scope.before_episode(abatement):
            return name, abatement
    return None


def _given_at_visits(scope: Scope) -> set[tuple[str | None, str]]:
    """The encounter and the drug (lower case) of each administration a clinician completed."""
    given = set()
    for item in scope.of_patient(MedicationAdministration):
        administration = item.model
        name = _drug_name(
            scope, administration.medicationCodeableConcept, administration.medicationReference
        )
        if name and administration.status == "completed" and administration.context:
            given.add((reference_of(administration.context), name.lower()))
    return given
