"""The evidence state of one stay, from what the FHIR mapping found: documents read, facts from
their text, then classification, result interpretation, the agent loop and medication safety.

This is where the CPU-heavy work happens (PDF text, OCR, the agent loop), in the pipeline and so
in whatever process runs the job, never in the mapping.
"""

from __future__ import annotations

from datetime import timedelta

from pipeline.checking.addressed_text import set_aside
from pipeline.clinical.agent import run_agent_loop
from pipeline.clinical.diagnoses import classify_diagnoses
from pipeline.clinical.drug_classes import medication_safety
from pipeline.clinical.results import interpret_results
from pipeline.evidence.mapped import MappedRecord
from pipeline.evidence.model import (
    EpisodeEncounter,
    EvidenceState,
    Exclusion,
    SourceDocument,
    TraceEvent,
    group_facts,
)
from pipeline.ingestion.documents import (
    chief_complaints,
    facts_from_document,
    ingest_document,
    ingestion_events,
)
from pipeline.ingestion.identity import ChartIdentity, chart_identity, with_identity
from pipeline.ingestion.ocr import OcrBudget
from pipeline.settings import PipelineSettings


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


def _earlier_note(
    mapped: MappedRecord, chart: ChartIdentity, settings: PipelineSettings, budget: OcrBudget
) -> SourceDocument | None:
    """The latest note before the episode, read under the stay's budget; None when there is
    none, or it names another patient."""
    if mapped.earlier_note is None:
        return None
    document = with_identity(
        ingest_document(mapped.earlier_note, mapped.encounter, settings, budget), chart
    )
    return None if document.other_patient else document


def build_evidence(mapped: MappedRecord, settings: PipelineSettings) -> EvidenceState:
    """The validated evidence state of the mapped stay, read under the deployment's settings."""
    # One OCR budget for the whole stay: a record full of scans cannot take unbounded work.
    budget = OcrBudget.for_job(settings)
    chart = chart_identity(mapped.facts)
    documents = [
        with_identity(ingest_document(p, mapped.encounter, settings, budget), chart)
        for p in mapped.documents
    ]
    documents.sort(key=lambda document: (document.date is None, document.date, document.id))
    earlier = _earlier_note(mapped, chart, settings, budget)
    facts = list(mapped.facts)
    for document in documents:
        # A document that names another patient is kept to show, never as evidence.
        if not document.other_patient:
            facts.extend(facts_from_document(document))
    # Note text addressed to a summarizing tool is never evidence: only its flag is kept.
    named = {
        d.id: (d.title or "A note") + (f" ({d.date:%Y-%m-%d})" if d.date else "") for d in documents
    }
    facts, addressed = set_aside(facts, named)
    trace = [
        TraceEvent(
            step=0,
            agent="map",
            action="mapped",
            detail=f"{len(facts)} facts, {len(documents)} documents, "
            f"{len(mapped.exclusions)} resources excluded",
            resource=mapped.encounter,
        ),
        *(
            TraceEvent(step=0, agent="map", action="episode", detail=why, resource=key)
            for key, why in mapped.episode.items()
        ),
        *_exclusion_events(mapped.exclusions),
        *ingestion_events(documents, step=0),
    ]
    state = EvidenceState(
        patient=mapped.patient,
        encounter=mapped.encounter,
        episode=[EpisodeEncounter(resource=key, reason=why) for key, why in mapped.episode.items()],
        record_begins=mapped.record_begins,
        complaints_before=chief_complaints(earlier) if earlier else [],
        complaints_noted_on=earlier.date if earlier else None,
        documents=documents,
        facts=group_facts(facts),
        exclusions=mapped.exclusions,
        flags_for_review=addressed,
        trace=trace,
    )
    state = interpret_results(classify_diagnoses(state, settings), settings)
    state = run_agent_loop(
        state,
        settings.max_agent_steps,
        renewal_window=timedelta(days=settings.medication_renewal_window_days),
    )
    return medication_safety(state, settings)
