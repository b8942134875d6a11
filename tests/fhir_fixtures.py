"""Hand-written FHIR R4 resources for rule tests: small, explicit, one concern each."""

from __future__ import annotations

import base64
from typing import Any

PATIENT_ID = "pat-1"
ENCOUNTER_ID = "enc-1"
ADMIT = "2024-03-01T10:00:00+00:00"
DISCHARGE = "2024-03-05T12:00:00+00:00"
IN_STAY = "2024-03-02T09:00:00+00:00"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
# One tablet twice a day, as ``medication_request``'s fields: a dosage (its route said apart).
TWICE_DAILY: dict[str, Any] = {"dose": "1 tablet", "frequency": (2, 1, "d")}


def _of_patient(resource_type: str, resource_id: str, **elements: Any) -> dict[str, Any]:
    """A resource of the test patient's: its type, its id, its subject and ``elements``."""
    subject = {"subject": {"reference": f"Patient/{PATIENT_ID}"}}
    return {"resourceType": resource_type, "id": resource_id} | subject | elements


def patient(patient_id: str = PATIENT_ID) -> dict[str, Any]:
    return {
        "resourceType": "Patient",
        "id": patient_id,
        "name": [{"given": ["Ada"], "family": "Lovelace"}],
        "gender": "female",
        "birthDate": "1950-06-15",
    }


def encounter(
    encounter_id: str = ENCOUNTER_ID,
    start: str = ADMIT,
    end: str | None = DISCHARGE,
    class_code: str = "IMP",
    patient_id: str = PATIENT_ID,
) -> dict[str, Any]:
    period = {"start": start} | ({"end": end} if end else {})
    return {
        "resourceType": "Encounter",
        "id": encounter_id,
        "status": "finished",
        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": class_code},
        "subject": {"reference": f"Patient/{patient_id}"},
        "period": period,
    }


def medication_statement(
    statement_id: str,
    name: str,
    *,
    status: str = "active",
    asserted: str | None = "2024-02-20",
    taken_until: str | None = None,
) -> dict[str, Any]:
    """What the patient reports taking (not an order)."""
    resource = _of_patient(
        "MedicationStatement", statement_id, status=status, medicationCodeableConcept={"text": name}
    )
    if asserted:
        resource["dateAsserted"] = asserted
    if taken_until:
        resource["effectivePeriod"] = {"start": "2020-01-01", "end": taken_until}
    return resource


def medication_request(
    request_id: str,
    name: str,
    *,
    code: str | None = None,
    status: str = "active",
    authored: str | None = ADMIT,
    encounter_id: str | None = None,
    category: str | None = None,
    dose: str | None = None,
    frequency: tuple[int, int, str] | None = None,
    route: str | None = None,
    reason: str | None = None,
    validity_end: str | None = None,
    patient_id: str = PATIENT_ID,
) -> dict[str, Any]:
    concept: dict[str, Any] = {"text": name}
    if code:
        concept["coding"] = [{"system": RXNORM, "code": code, "display": name}]
    resource: dict[str, Any] = {
        "resourceType": "MedicationRequest",
        "id": request_id,
        "status": status,
        "intent": "order",
        "medicationCodeableConcept": concept,
        "subject": {"reference": f"Patient/{patient_id}"},
    }
    if authored:
        resource["authoredOn"] = authored
    if encounter_id:
        resource["encounter"] = {"reference": f"Encounter/{encounter_id}"}
    if category:
        resource["category"] = [{"coding": [{"code": category}]}]
    dosage: dict[str, Any] = {}
    if dose:
        value, _, unit = dose.partition(" ")
        number = float(value) if "." in value else int(value)
        quantity: dict[str, Any] = {"value": number} | ({"unit": unit} if unit else {})
        dosage["doseAndRate"] = [{"doseQuantity": quantity}]
    if frequency:
        count, period, unit = frequency
        dosage["timing"] = {"repeat": {"frequency": count, "period": period, "periodUnit": unit}}
    if route:
        dosage["route"] = {"text": route}
    if dosage:
        resource["dosageInstruction"] = [dosage]
    if reason:
        resource["reasonCode"] = [{"text": reason}]
    if validity_end:
        resource["dispenseRequest"] = {"validityPeriod": {"end": validity_end}}
    return resource


def old_order(request_id: str, name: str, authored: str = "2003-07-19T10:00:00Z") -> dict[str, Any]:
    """An order written years before the stay, still "active" and never renewed (one to
    confirm), with a whole once-daily oral dosage."""
    return medication_request(
        request_id, name, authored=authored, dose="1 tablet", frequency=(1, 1, "d"), route="oral"
    )


def order_by_reference(request_id: str, medication: str, **fields: Any) -> dict[str, Any]:
    """A medication request that names its drug only by reference (``medication``, a
    Medication's URL): the reference is all a reader has to follow; ``fields`` as
    ``medication_request`` takes them."""
    order = medication_request(request_id, "", **fields)
    del order["medicationCodeableConcept"]
    return order | {"medicationReference": {"reference": medication}}


def ordered_in_stay(request_id: str, name: str, **fields: Any) -> dict[str, Any]:
    """A medication request ordered on the stay's second day, in the stay's encounter."""
    return medication_request(
        request_id, name, authored=IN_STAY, encounter_id=ENCOUNTER_ID, **fields
    )


def condition(
    condition_id: str,
    display: str,
    *,
    code: str = "38341003",
    clinical: str = "active",
    verification: str = "confirmed",
    encounter_id: str | None = ENCOUNTER_ID,
    onset: str = ADMIT,
    abatement: str | None = None,
) -> dict[str, Any]:
    resource = _of_patient(
        "Condition",
        condition_id,
        clinicalStatus={"coding": [{"code": clinical}]},
        verificationStatus={"coding": [{"code": verification}]},
        code={"coding": [{"system": "http://snomed.info/sct", "code": code}], "text": display},
        onsetDateTime=onset,
    )
    if encounter_id:
        resource["encounter"] = {"reference": f"Encounter/{encounter_id}"}
    if abatement:
        resource["abatementDateTime"] = abatement
    return resource


def allergy(allergy_id: str, substance: str, *, clinical: str = "active") -> dict[str, Any]:
    return {
        "resourceType": "AllergyIntolerance",
        "id": allergy_id,
        "clinicalStatus": {"coding": [{"code": clinical}]},
        "verificationStatus": {"coding": [{"code": "confirmed"}]},
        "code": {"text": substance},
        "patient": {"reference": f"Patient/{PATIENT_ID}"},
        "recordedDate": "2020-01-01",
        "reaction": [{"manifestation": [{"text": "Hives"}]}],
        "criticality": "high",
    }


def observation(
    observation_id: str,
    name: str,
    value: float,
    unit: str,
    *,
    loinc: str = "2345-7",
    when: str = "2024-03-02T08:00:00+00:00",
    status: str = "final",
    category: str = "laboratory",
) -> dict[str, Any]:
    return _of_patient(
        "Observation",
        observation_id,
        status=status,
        category=[{"coding": [{"code": category}]}],
        code={"coding": [{"system": "http://loinc.org", "code": loinc}], "text": name},
        encounter={"reference": f"Encounter/{ENCOUNTER_ID}"},
        effectiveDateTime=when,
        valueQuantity={"value": value, "unit": unit},
        referenceRange=[{"low": {"value": 70}, "high": {"value": 100}}],
    )


def procedure(
    procedure_id: str, name: str, encounter_id: str = ENCOUNTER_ID, when: str = ADMIT
) -> dict[str, Any]:
    return _completed("Procedure", procedure_id, name, encounter_id, when)


def diagnostic_report(
    report_id: str, status: str, results: list[str], name: str = "Basic metabolic panel"
) -> dict[str, Any]:
    return _of_patient(
        "DiagnosticReport",
        report_id,
        status=status,
        code={"text": name},
        encounter={"reference": f"Encounter/{ENCOUNTER_ID}"},
        effectiveDateTime="2024-03-02T08:00:00+00:00",
        result=[{"reference": f"Observation/{result}"} for result in results],
    )


def attachment(text: str | bytes, content_type: str = "text/plain; charset=utf-8") -> dict:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return {"contentType": content_type, "data": base64.b64encode(data).decode("ascii")}


def medication_administration(
    administration_id: str, name: str, when: str, *, encounter_id: str = ENCOUNTER_ID
) -> dict[str, Any]:
    return _completed("MedicationAdministration", administration_id, name, encounter_id, when)


def immunization(
    immunization_id: str, vaccine: str, when: str, *, encounter_id: str = ENCOUNTER_ID
) -> dict[str, Any]:
    return _completed("Immunization", immunization_id, vaccine, encounter_id, when)


def goal(goal_id: str, description: str, *, lifecycle: str = "active") -> dict[str, Any]:
    """A goal of the patient's, as a care plan's ``goal`` refers to it."""
    return _of_patient(
        "Goal", goal_id, lifecycleStatus=lifecycle, description={"text": description}
    )


# Where a completed event names what was done, its patient, its encounter and its time: its
# type's elements.
_EVENT_ELEMENTS = {
    "Procedure": ("code", "subject", "encounter", "performedDateTime"),
    "MedicationAdministration": (
        "medicationCodeableConcept",
        "subject",
        "context",
        "effectiveDateTime",
    ),
    "Immunization": ("vaccineCode", "patient", "encounter", "occurrenceDateTime"),
}


def _completed(
    resource_type: str, resource_id: str, name: str, encounter_id: str, when: str
) -> dict[str, Any]:
    """A procedure done, a dose or a vaccine given: one shape, in the element names
    ``resource_type`` uses."""
    concept, patient_link, link, time = _EVENT_ELEMENTS[resource_type]
    return {
        "resourceType": resource_type,
        "id": resource_id,
        "status": "completed",
        concept: {"text": name},
        patient_link: {"reference": f"Patient/{PATIENT_ID}"},
        link: {"reference": f"Encounter/{encounter_id}"},
        time: when,
    }


def document_reference(
    document_id: str, content: dict[str, Any], *, encounter_id: str = ENCOUNTER_ID
) -> dict[str, Any]:
    return _of_patient(
        "DocumentReference",
        document_id,
        status="current",
        type={"text": "Discharge note"},
        date="2024-03-05T11:00:00+00:00",
        content=[{"attachment": content}],
        context={"encounter": [{"reference": f"Encounter/{encounter_id}"}]},
    )


def bundle(*resources: dict[str, Any], kind: str = "collection") -> dict[str, Any]:
    return {
        "resourceType": "Bundle",
        "type": kind,
        "entry": [
            {
                "fullUrl": f"urn:uuid:{r.get('id', index) if isinstance(r, dict) else index}",
                "resource": r,
            }
            for index, r in enumerate(resources)
        ],
    }


def stay(*resources: dict[str, Any]) -> dict[str, Any]:
    """A bundle with the patient and the inpatient encounter, plus ``resources``."""
    return bundle(patient(), encounter(), *resources)


def care_plan(
    plan_id: str,
    title: str,
    *,
    encounter_id: str | None = ENCOUNTER_ID,
    activity: str | None = None,
    activity_status: str = "in-progress",
    **fields: Any,
) -> dict[str, Any]:
    """An active care plan of the patient's, titled by its category (made in ``encounter_id``),
    with one activity, ``activity``, where given; ``fields`` its other elements."""
    resource = _of_patient(
        "CarePlan", plan_id, status="active", intent="plan", category=[{"text": title}]
    )
    if encounter_id:
        resource["encounter"] = {"reference": f"Encounter/{encounter_id}"}
    if activity:
        resource["activity"] = [{"detail": {"status": activity_status, "code": {"text": activity}}}]
    return resource | fields


def appointment(
    appointment_id: str, description: str, start: str = "2024-03-19T09:00:00+00:00", **fields: Any
) -> dict[str, Any]:
    """A booked appointment of the patient's after discharge; ``fields`` its other elements."""
    resource: dict[str, Any] = {
        "resourceType": "Appointment",
        "id": appointment_id,
        "status": "booked",
        "description": description,
        "start": start,
        "participant": [{"actor": {"reference": f"Patient/{PATIENT_ID}"}, "status": "accepted"}],
    }
    return resource | fields
