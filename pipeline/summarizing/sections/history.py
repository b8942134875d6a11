"""A "History of X" recorded during the stay: the coded after-state of a procedure of the
episode (cited on the first line), the aftermath of the stay's own event (cited on the principal
diagnosis's line), or, with no procedure for it, a treatment the record implies but does not
document (flagged)."""

from __future__ import annotations

from datetime import datetime

from pipeline.clinical.diagnoses import STATUS_TERM, history_topic, topic_stems
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    attributes_as,
)
from pipeline.evidence.summary import SentenceFlag
from pipeline.summarizing.sections.common import (
    each_procedure_once,
    is_index_procedure,
    listed,
    procedures_by_stay,
    significant_procedures,
)
from pipeline.text.rendering import plain_term


def history_coded_in_stay(diagnosis: DiagnosisAttributes, stay_fact: Fact | None) -> set[str]:
    """The topic stems of a "History of X" (not a "Status post") coded during the stay; empty
    for any other diagnosis."""
    stay = attributes_as(stay_fact, EncounterAttributes) if stay_fact is not None else None
    onset = diagnosis.onset
    during = (
        stay is not None
        and stay.start is not None
        and onset is not None
        and stay.start <= onset
        and (stay.end is None or onset <= stay.end)
    )
    return history_topic(diagnosis.display) if during and not diagnosis.status_post else set()


def coded_after_done(episode: list[Fact], stay_fact: Fact | None, done: set[str]) -> list[str]:
    """The episode's "History of X" coded during the stay where a procedure of the episode names
    part of X ("History of tubal ligation" the day of the ligation): the procedure's coded
    after-state, cited on the first line rather than listed as a diagnosis of the stay."""
    return [
        fact.id
        for fact in episode
        if history_coded_in_stay(attributes_as(fact, DiagnosisAttributes), stay_fact) & done
    ]


def aftermath(episode: list[Fact], principal: list[Fact]) -> list[str]:
    """The episode's "History of X" diagnoses whose X the principal diagnosis names."""
    named = {
        w for f in principal for w in topic_stems(attributes_as(f, DiagnosisAttributes).display)
    }
    found = []
    for fact in episode:
        diagnosis = attributes_as(fact, DiagnosisAttributes)
        said = history_topic(diagnosis.display)
        if said and not diagnosis.status_post and said <= named:
            found.append(fact.id)
    return found


IMPLIED_TREATMENT = SentenceFlag(
    code="implied_treatment",
    reason="a treatment the record implies but does not document: confirm it was done in this "
    "stay, and when",
)


def implied_treatment(
    diagnosis: DiagnosisAttributes, stay_fact: Fact | None, done: set[str]
) -> bool:
    """A "History of X" recorded during the stay with no procedure of the episode that names
    any part of X ("History of coronary artery bypass grafting" coded on the day of admission):
    the record implies the treatment without documenting it. A procedure that shares a word with
    X ("Ligation of bilateral fallopian tubes" for "History of tubal ligation") may be it: the
    line then never says that no procedure is recorded. ``done``: the topic stems of the
    episode's procedures."""
    topic = history_coded_in_stay(diagnosis, stay_fact)
    return bool(topic) and not topic & done


def procedure_stems(state: EvidenceState) -> set[str]:
    """The topic stems of the episode's procedures, against which a "History of X" is read."""
    return {
        word
        for f in state.facts["procedure"]
        for word in topic_stems(attributes_as(f, ProcedureAttributes).name)
    }


def implied_treatments(
    state: EvidenceState, stay_fact: Fact | None
) -> list[tuple[str, datetime | None, Fact]]:
    """What the stay did as the record implies it without a procedure (``implied_treatment``):
    each treatment's name ("renal transplant"), its date (its "History of"'s onset) and fact."""
    done = procedure_stems(state)
    # "History of myocardial infarction" on the day of the infarction is its aftermath, no
    # treatment.
    events = [
        f
        for f in listed(state, "principal", "episode")
        if not history_topic(attributes_as(f, DiagnosisAttributes).display)
    ]
    own_event = set(aftermath(listed(state, "episode"), events))
    found = []
    for f in listed(state, "principal", "episode"):
        diagnosis = attributes_as(f, DiagnosisAttributes)
        if f.id not in own_event and implied_treatment(diagnosis, stay_fact, done):
            what = STATUS_TERM.sub("", plain_term(diagnosis.display)).strip()
            found.append((what, diagnosis.onset, f))
    return found


def operations_of_stay(
    state: EvidenceState, routine: CodeTable, stay_fact: Fact | None
) -> list[tuple[str, datetime | None, list[str]]]:
    """This stay's operations and interventions (its index procedures, each once: the name,
    the first day, the facts) or, where the episode records no significant procedure, the
    treatments the record implies (``implied_treatments``): what a post-operative review and a
    graft's function are asked after."""
    recorded = [
        f for f in procedures_by_stay(state, routine)[1][1] if is_index_procedure(f, routine)
    ]
    operations = [
        (p.first.name, p.first.performed_start, p.fact_ids) for p in each_procedure_once(recorded)
    ]
    if not significant_procedures(state, routine):
        operations += [
            (what, onset, [f.id]) for what, onset, f in implied_treatments(state, stay_fact)
        ]
    return operations
