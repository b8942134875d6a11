"""FHIR input to the evidence state: index, scope, map, ingest notes, then the agent loop."""

from __future__ import annotations

from fhir_mapping.care import map_care
from fhir_mapping.clinical import map_allergies, map_conditions, map_procedures
from fhir_mapping.demographics import encounter_fact, patient_fact
from fhir_mapping.documents import collect_documents
from fhir_mapping.mapped import Mapped
from fhir_mapping.medications import map_medications
from fhir_mapping.resources import EvidenceInputError, ResourceIndex, index_resources
from fhir_mapping.results import map_results
from fhir_mapping.scope import Scope, choose_scope
from pipeline.agent import run_agent_loop
from pipeline.diagnoses import classify_diagnoses
from pipeline.documents import facts_from_document, ingestion_events
from pipeline.drug_classes import medication_safety
from pipeline.evidence import (
    EpisodeEncounter,
    EvidenceState,
    Exclusion,
    TraceEvent,
    group_facts,
)
from pipeline.results import interpret_results
from pipeline.settings import PipelineSettings, get_settings

MAPPERS = (
    map_conditions,
    map_medications,
    map_allergies,
    map_procedures,
    map_results,
    map_care,
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


def _exclusion_events(exclusions: list[Exclusion]) -> list[TraceEvent]:
    return [
        TraceEvent(
            step=0,
            agent="map",
            action=f"excluded:{exclusion.kind}",
            detail=exclusion.reason,
            resource=exclusion.resource,
        )
        for exclusion in exclusions
    ]


def build_evidence(
    data: object, encounter_id: str | None = None, settings: PipelineSettings | None = None
) -> EvidenceState:
    """The validated evidence state of one patient's stay; EvidenceInputError if there is none."""
    settings = settings or get_settings()
    index = index_resources(data)
    scope = _scope(index, encounter_id, settings.episode_window_h)
    mapped = Mapped(facts=[patient_fact(scope), encounter_fact(scope)])
    for mapper in MAPPERS:
        mapped.extend(mapper(scope))
    documents, document_exclusions = collect_documents(scope, settings)
    mapped.extend(document_exclusions)
    for document in documents:
        mapped.facts.extend(facts_from_document(document))
    exclusions = index.failures + mapped.exclusions
    trace = [
        TraceEvent(
            step=0,
            agent="map",
            action="mapped",
            detail=f"{len(mapped.facts)} facts, {len(documents)} documents, "
            f"{len(exclusions)} resources excluded",
            resource=scope.encounter.key,
        ),
        *(
            TraceEvent(step=0, agent="map", action="episode", detail=why, resource=key)
            for key, why in scope.episode.items()
        ),
        *_exclusion_events(exclusions),
        *ingestion_events(documents, step=0),
    ]
    state = EvidenceState(
        patient=scope.patient.key,
        encounter=scope.encounter.key,
        episode=[EpisodeEncounter(resource=key, reason=why) for key, why in scope.episode.items()],
        documents=documents,
        facts=group_facts(mapped.facts),
        exclusions=exclusions,
        trace=trace,
    )
    state = interpret_results(classify_diagnoses(state, settings), settings)
    state = run_agent_loop(state, settings.max_agent_steps)
    return medication_safety(state, settings)
