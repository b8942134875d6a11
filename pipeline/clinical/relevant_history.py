"""The past history that bears on the principal diagnosis.

A physician assesses a heart attack in a patient with a previous bypass differently from a first
one: graft disease, the choice of P2Y12 inhibitor, the secondary prevention already taken. The
data standards of each disease name the history elements that matter to it (the
``relevant_history`` table: prior MI, PCI and CABG for an acute coronary syndrome; prior
revascularization and valve surgery for heart failure; a previous stroke for a stroke). Such a
past event ("History of coronary artery bypass grafting", recorded before the admission) is
said on the principal diagnosis's line, once, and not again among the rest of the past history,
where readers found it "belongs in the NSTEMI assessment".
"""

from __future__ import annotations

from pipeline.clinical.clinical_terms import PAST_HISTORY
from pipeline.clinical.episode_diagnoses import listed
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    attributes_as,
    aware,
)
from pipeline.text.rendering import plain_term


def is_past_event(diagnosis: DiagnosisAttributes) -> bool:
    """A "History of X" (SNOMED CT's past-history situations) not written as this episode's
    "Status post X", and not resolved (a resolved one keeps its own line, which says when)."""
    return (
        bool(PAST_HISTORY.match(plain_term(diagnosis.display)))
        and not diagnosis.status_post
        and not diagnosis.abatement
    )


def past_event_name(diagnosis: DiagnosisAttributes) -> str:
    """The event a past-history situation records: "History of coronary artery bypass grafting
    (situation)" is "coronary artery bypass grafting"."""
    return PAST_HISTORY.sub("", plain_term(diagnosis.display)).strip()


def bearing_history(state: EvidenceState, relevant: CodeTable) -> list[Fact]:
    """The active problem list's past events, recorded before the admission, that the table
    names as history bearing on one of the principal diagnoses; a "History of X" recorded in
    the stay is its own event's aftermath (``pipeline.clinical.episode_diagnoses``), not
    history."""
    principal = [attributes_as(f, DiagnosisAttributes).display for f in listed(state, "principal")]
    rules = [
        rule["history"]
        for rule in relevant.extra["rules"]
        if any(names_it(name, rule["principal"]) for name in principal)
    ]
    stay = state.stay()
    if not rules or stay is None or stay.start is None:
        return []
    return [
        f
        for f in listed(state, "active")
        if is_past_event(diagnosis := attributes_as(f, DiagnosisAttributes))
        and diagnosis.onset is not None
        and aware(diagnosis.onset) < aware(stay.start)
        and any(names_it(past_event_name(diagnosis), rule) for rule in rules)
    ]
