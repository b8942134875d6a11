"""The Procedures section: the episode's significant procedures, each once (an earlier stay of
the episode's first, said to be that stay's), then the implants on record and what the stay
supplied."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import (
    cited_sentence,
    each_procedure_once,
    earlier_stay_end,
    earlier_stay_of,
    implants,
    performed,
    significant_procedures,
    split_at,
    supplied_in_stay,
)


def procedures_section(
    state: EvidenceState, render: Any, routine: CodeTable, implant_table: CodeTable
) -> list[Sentence]:
    """Each significant procedure once, an earlier stay of the episode's first and said to be
    that stay's (seven days of oxygen there read as this one-day stay's); then the
    implants on record (a valve replacement's bioprosthesis: whether the valve is mechanical
    decides the anticoagulation) and the organs,
    tissues and blood products supplied during the stay (a kidney graft, where the transplant
    itself is not coded), never its consumables."""
    earlier, own = split_at(
        earlier_stay_end(state), significant_procedures(state, routine), performed
    )
    sentences = [
        cited_sentence("procedures", render.procedure(p, in_earlier), p.fact_ids)
        for in_earlier, facts in ((earlier_stay_of(state), earlier), (None, own))
        for p in each_procedure_once(facts)
    ]
    implanted = implants(state, implant_table)
    if implanted:
        text = render.implants([f.attributes for f in implanted])
        sentences.append(cited_sentence("procedures", text, [f.id for f in implanted]))
    supplied = supplied_in_stay(state, implant_table)
    if supplied:
        text = render.supplied([f.attributes for f in supplied])
        sentences.append(cited_sentence("procedures", text, [f.id for f in supplied]))
    return sentences
