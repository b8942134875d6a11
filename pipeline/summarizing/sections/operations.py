"""What the stay did, as the draft's lines name it: its operations and interventions, or the
treatments the record implies without a procedure (``pipeline.clinical.episode_diagnoses``),
which are flagged for confirmation."""

from __future__ import annotations

from datetime import datetime

from pipeline.clinical.episode_diagnoses import implied_treatments
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import SentenceFlag
from pipeline.summarizing.sections.common import (
    each_procedure_once,
    is_index_procedure,
    procedures_by_stay,
    significant_procedures,
)

IMPLIED_TREATMENT = SentenceFlag(
    code="implied_treatment",
    reason="a treatment the record implies but does not document: confirm it was done in this "
    "stay, and when",
)


def operations_of_episode(
    state: EvidenceState, routine: CodeTable
) -> list[tuple[str, datetime | None, list[str]]]:
    """The episode's operations and interventions (its index procedures, each once: the name,
    the first day, the facts), an earlier stay's of it too (a knee operation before the
    skilled nursing stay the patient goes home from), or, where the episode records no
    significant procedure, the treatments the record implies: what a post-operative review,
    the pain relief at home and a graft's function are asked after."""
    (_, earlier), (_, own) = procedures_by_stay(state, routine)
    recorded = [f for f in [*earlier, *own] if is_index_procedure(f, routine)]
    operations = [
        (p.first.name, p.first.performed_start, p.fact_ids) for p in each_procedure_once(recorded)
    ]
    if not significant_procedures(state, routine):
        operations += [(t.name, t.onset, [t.fact.id]) for t in implied_treatments(state)]
    return operations
