"""The discharge diagnoses: the principal diagnosis, or a flagged line that says what the stay
was coded as and what was done when the record names no clinical problem; then the diagnoses
that began in the episode, as a physician lists them (``pipeline.clinical.diagnoses``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.clinical.diagnosis_specifics import Specified, specified_in_notes
from pipeline.clinical.episode_diagnoses import (
    aftermath,
    coded_after_done,
    is_implied_treatment,
    listed,
    procedure_stems,
)
from pipeline.clinical.heart_failure import HeartFailureKind, heart_failure_kind
from pipeline.clinical.relevant_history import bearing_history, past_event_name
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence
from pipeline.summarizing.sections.operations import IMPLIED_TREATMENT
from pipeline.summarizing.sections.unnamed_principal import in_place_of_principal


def diagnoses_section(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable, CodeTable, CodeTable, CodeTable],
    stay: Fact | None,
) -> list[Sentence]:
    """The principal diagnosis first, then the diagnoses that began in the episode; when the
    record names no clinical problem for the stay, a flagged line says so first. A "History of
    X" recorded in the stay where X is the principal diagnosis ("History of myocardial
    infarction" the day of the infarction) is the coded aftermath of this stay's own event: it
    is cited on the principal diagnosis's line, not listed as a second diagnosis; so is the past
    history that bears on it (``pipeline.clinical.relevant_history``: "a previous coronary
    artery bypass grafting" beside an infarction), and what the notes say that its coded term
    leaves unsaid (``pipeline.clinical.diagnosis_specifics``: the opioid of a "Dependent drug
    abuse"). ``tables``: the routine procedures, the implants, the transplanted organs, the
    relevant history and the diagnosis specifics."""
    routine, implants, organs, relevant, specifics = tables
    principal = listed(state, "principal")
    history, said, kind = _principal_context(state, principal, (relevant, specifics))
    done = procedure_stems(state)
    folded_in = aftermath(listed(state, "episode"), principal)
    after_done = coded_after_done(state, listed(state, "episode"), done)
    in_place = (
        [] if principal else in_place_of_principal(state, render, (routine, implants, organs), stay)
    )
    lines = []
    for f in listed(state, "principal", "episode"):
        if f.id in folded_in or f.id in after_done:
            continue
        folded = folded_in if f in principal else []
        # A principal diagnosis made in the stay cites the coded reason it specifies.
        specified = [s.id for s in listed(state, "specified")] if f in principal else []
        is_first = bool(principal) and f == principal[0]
        bearing = history if is_first else []
        notes = said if is_first else []
        named_kind = kind if is_first else None
        cited = [
            f.id,
            *_status_post_of(state, f),
            *folded,
            *specified,
            *(h.id for h in bearing),
            *(s.fact.id for s in notes),
            *_kind_cited(named_kind, stay),
        ]
        if not is_implied_treatment(state, attributes_as(f, DiagnosisAttributes), done):
            events = [_event(h) for h in bearing]
            text = render.diagnosis(f.attributes, events, notes, named_kind)
            lines.append(cited_sentence("diagnoses", text, cited))
            continue
        # Where the flagged principal-diagnosis line says it already, it is cited there, once.
        if any(f.id in line.citations for line in in_place):
            continue
        line = cited_sentence("diagnoses", render.implied_treatment(f.attributes), cited)
        lines.append(line.model_copy(update={"flags": [IMPLIED_TREATMENT]}))
    listing = in_place + lines
    if listing and after_done:
        first = listing[0]
        listing[0] = first.model_copy(update={"citations": [*first.citations, *after_done]})
    return listing


def _principal_context(
    state: EvidenceState, principal: list[Fact], tables: tuple[CodeTable, CodeTable]
) -> tuple[list[Fact], list[Specified], HeartFailureKind | None]:
    """What the first principal diagnosis's line says besides it: the past history that bears
    on it, what the notes name that its term leaves unsaid, and, for heart failure, its kind
    (``pipeline.clinical.heart_failure``). ``tables``: the relevant history, the diagnosis
    specifics."""
    if not principal:
        return [], [], None
    relevant, specifics = tables
    display = attributes_as(principal[0], DiagnosisAttributes).display
    return (
        bearing_history(state, relevant),
        specified_in_notes(state, display, specifics),
        heart_failure_kind(state, display, specifics),
    )


def _kind_cited(kind: HeartFailureKind | None, stay: Fact | None) -> list[str]:
    """What a heart failure's kind is read from: the stay, whose episode joined the emergency
    visit, and the ejection fraction."""
    if kind is None:
        return []
    cited = [stay.id] if kind.emergency is not None and stay is not None else []
    return cited + ([kind.ejection_fraction.id] if kind.ejection_fraction is not None else [])


def _event(fact: Fact) -> tuple[str, datetime | None]:
    """A past event as the line names it: what was done, and when it was recorded."""
    diagnosis = attributes_as(fact, DiagnosisAttributes)
    return past_event_name(diagnosis), diagnosis.onset


def _status_post_of(state: EvidenceState, fact: Fact) -> list[str]:
    """The procedure a "Status post" line names, to cite beside the diagnosis."""
    diagnosis = attributes_as(fact, DiagnosisAttributes)
    return [
        f.id
        for f in state.facts["procedure"]
        if diagnosis.status_post is not None
        and attributes_as(f, ProcedureAttributes).name == diagnosis.status_post
        and attributes_as(f, ProcedureAttributes).performed_start == diagnosis.status_post_on
    ]
