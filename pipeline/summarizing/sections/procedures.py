"""The Procedures section: the episode's significant procedures, each once (an earlier stay of
the episode's first, said to be that stay's), then the implants on record and what the stay
supplied."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.episode_diagnoses import implied_treatments
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import EvidenceState, Fact
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import (
    cited_sentence,
    each_procedure_once,
    implants,
    procedures_by_stay,
    supplied_in_stay,
)


def _implied_line(state: EvidenceState, render: Any, stay: Fact | None) -> list[Sentence]:
    """What the stay did as the record implies it ("renal transplant", its "History of" recorded
    that day), for an episode with no significant procedure: a Procedures section that read "None
    recorded" beside a diagnosis line saying a transplant was done contradicted itself."""
    implied = implied_treatments(state)
    if not implied:
        return []
    text = render.implied_procedures([(what, onset) for what, onset, _ in implied])
    return [cited_sentence("procedures", text, [f.id for *_, f in implied])]


def procedures_section(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable],
    stay: Fact | None,
) -> list[Sentence]:
    """Each significant procedure once, an earlier stay of the episode's first and said to be
    that stay's (seven days of oxygen there read as this one-day stay's), or, with none, what
    the record implies was done; then the implants on record (a valve replacement's
    bioprosthesis: whether the valve is mechanical decides the anticoagulation) and the organs,
    tissues and blood products supplied during the stay (a kidney graft, where the transplant
    itself is not coded), never its consumables. ``tables``: the routine procedures and the
    implants."""
    routine, implant_table = tables
    sentences = [
        cited_sentence("procedures", render.procedure(p, in_earlier), p.fact_ids)
        for in_earlier, facts in procedures_by_stay(state, routine)
        for p in each_procedure_once(facts)
    ]
    if not sentences:
        sentences = _implied_line(state, render, stay)
    implanted = implants(state, implant_table)
    if implanted:
        text = render.implants([f.attributes for f in implanted])
        sentences.append(cited_sentence("procedures", text, [f.id for f in implanted]))
    supplied = supplied_in_stay(state, implant_table)
    if supplied:
        text = render.supplied([f.attributes for f in supplied])
        sentences.append(cited_sentence("procedures", text, [f.id for f in supplied]))
    return sentences
