"""FHIR input to one mapped stay: index, choose the stay and its episode, map each resource type.

What follows (reading the documents, the agent loop) is the pipeline's: ``pipeline.build``.
"""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.observation import Observation
from fhir.resources.R4B.procedure import Procedure

from fhir_mapping.care import map_care
from fhir_mapping.clinical import map_allergies, map_conditions, map_procedures, performed
from fhir_mapping.demographics import encounter_fact, patient_fact
from fhir_mapping.devices import map_devices
from fhir_mapping.documents import collect_documents, earlier_note
from fhir_mapping.mapped import Mapped
from fhir_mapping.medication_statements import map_medication_statements
from fhir_mapping.medications import map_medications
from fhir_mapping.organ_history import map_organ_history
from fhir_mapping.prescriptions import map_prescriptions
from fhir_mapping.resources import EvidenceInputError, ResourceIndex, index_resources
from fhir_mapping.results import map_results, observation_categories, observation_effective
from fhir_mapping.scope import Scope, choose_scope
from pipeline.evidence.mapped import EPISODE_WINDOW_H, MappedRecord
from pipeline.evidence.model import aware

MAPPERS = (
    map_conditions,
    map_medications,
    map_medication_statements,
    map_allergies,
    map_procedures,
    map_results,
    map_care,
    map_devices,
    map_organ_history,
    map_prescriptions,
)


def _scope(index: ResourceIndex, encounter_id: str | None, window_h: float) -> Scope:
    try:
        return choose_scope(index, encounter_id, window_h)
    except EvidenceInputError as error:
        broken = [item for item in index.failures if item.resource.startswith(("Patient", "Enc"))]
        if broken:
            details = "; ".join(f"{item.resource}: {item.reason}" for item in broken)
            raise EvidenceInputError(f"{error} ({details})") from error
        raise


def record_begins(scope: Scope) -> dict[str, datetime]:
    """The earliest procedure and laboratory result of the patient in what was read (whatever
    the stay): where the available record starts for each."""
    dated: dict[str, list[datetime]] = {"procedure": [], "lab_result": []}
    for item in scope.index.of_type(Procedure):
        procedure = item.model
        when, _ = performed(procedure)
        if when is not None and scope.is_patient(procedure.subject):
            dated["procedure"].append(aware(when))
    for result in scope.index.of_type(Observation):
        observation = result.model
        when = observation_effective(observation)
        if (
            when is not None
            and scope.is_patient(observation.subject)
            and "laboratory" in observation_categories(observation)
        ):
            dated["lab_result"].append(aware(when))
    return {kind: min(moments) for kind, moments in dated.items() if moments}


def map_record(
    data: object, encounter_id: str | None = None, window_h: float = EPISODE_WINDOW_H
) -> MappedRecord:
    """One stay of the record, mapped: the patient and episode, facts from the structured
    resources, what was excluded and why, and the documents to read. Raises EvidenceInputError
    when the input holds no stay to summarize. Pure: reads no attachment, asks nothing."""
    index = index_resources(data)
    scope = _scope(index, encounter_id, window_h)
    mapped = Mapped(facts=[patient_fact(scope), encounter_fact(scope)])
    for mapper in MAPPERS:
        mapped.extend(mapper(scope))
    documents, document_exclusions = collect_documents(scope)
    mapped.extend(document_exclusions)
    return MappedRecord(
        record_begins=record_begins(scope),
        earlier_note=earlier_note(scope),
        patient=scope.patient.key,
        encounter=scope.encounter.key,
        episode=dict(scope.episode),
        facts=mapped.facts,
        exclusions=index.failures + mapped.exclusions,
        documents=documents,
    )
