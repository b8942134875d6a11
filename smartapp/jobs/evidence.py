"""A FHIR record to the evidence state of one stay: the mapping (pure), then the pipeline (which
reads the documents and runs the agent loop). Where the two layers meet, for jobs and the CLI."""

from __future__ import annotations

from fhir_mapping.record import map_record
from pipeline.build import build_evidence
from pipeline.errors import ProvenoteError
from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings


def evidence_from_fhir(
    data: object, encounter_id: str | None = None, *, settings: PipelineSettings
) -> EvidenceState:
    """The evidence state of a stay in ``data`` (a Bundle or a list of resources): the launch's
    encounter, else the latest inpatient one. EvidenceInputError when there is no stay."""
    return build_evidence(map_record(data, encounter_id, settings.episode_window_h), settings)


def require_inpatient(state: EvidenceState, inpatient_classes: set[str]) -> None:
    """A discharge summary is drafted for an inpatient stay only; anything else is refused
    before a draft exists, so nothing is written."""
    stays = [
        fact.attributes
        for fact in state.facts.get("encounter", [])
        if getattr(fact.attributes, "kind", None) == "stay"
    ]
    kind = getattr(stays[0], "class_code", None) if stays else None
    if kind not in inpatient_classes:
        raise ProvenoteError(
            f"not an inpatient stay (encounter class {kind or 'unknown'}): Provenote drafts "
            "discharge summaries for inpatient stays only; nothing was written"
        )
