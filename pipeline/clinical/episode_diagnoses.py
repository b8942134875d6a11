"""The episode's diagnoses as the draft and the drug rules read them: by listing, and a "History
of X" recorded during the stay, which is either the coded aftermath of the stay's own event, the
after-state of a procedure of the episode, or a treatment the record implies but does not
document. One reader, so that the draft's lines and the indications of the drug rules never
disagree about what the stay did."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from pipeline.clinical.clinical_terms import STATUS_TERM, history_topic, topic_stems
from pipeline.clinical.risk_flags import during_stay
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    attributes_as,
)
from pipeline.text.rendering import plain_term


class ImpliedTreatment(NamedTuple):
    """A treatment the record implies: its name ("renal transplant"), its date (its "History
    of"'s onset) and the "History of" fact that implies it."""

    name: str
    onset: datetime | None
    fact: Fact


def listed(state: EvidenceState, *listings: str) -> list[Fact]:
    """Diagnosis facts of these listings (pipeline.clinical.diagnoses), in the order given, then by
    onset: never alphabetical."""
    facts = [
        f
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes)
        and (f.attributes.listing or "episode") in listings
    ]
    return sorted(
        facts,
        key=lambda f: (
            listings.index(attributes_as(f, DiagnosisAttributes).listing or "episode"),
            attributes_as(f, DiagnosisAttributes).onset is None,
            attributes_as(f, DiagnosisAttributes).onset,
        ),
    )


def procedure_stems(state: EvidenceState) -> set[str]:
    """The topic stems of the episode's procedures, against which a "History of X" is read."""
    return {
        word
        for f in state.facts["procedure"]
        for word in topic_stems(attributes_as(f, ProcedureAttributes).name)
    }


def history_in_stay(state: EvidenceState, diagnosis: DiagnosisAttributes) -> set[str]:
    """The topic stems of a "History of X" (not a "Status post") coded during the stay; empty
    for any other diagnosis."""
    during = during_stay(state, diagnosis.onset)
    return history_topic(diagnosis.display) if during and not diagnosis.status_post else set()


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


def coded_after_done(state: EvidenceState, episode: list[Fact], done: set[str]) -> list[str]:
    """The episode's "History of X" coded during the stay where a procedure of the episode names
    part of X ("History of tubal ligation" the day of the ligation): the procedure's coded
    after-state, cited on the first line rather than listed as a diagnosis of the stay. So is a
    "Status post X" coded during the stay (one whose X a procedure of the episode names whole):
    the Procedures section lists the procedure, and a line "Status post Excision of appendix:
    diagnosis of this stay" beside the appendicitis read as the operation said twice."""
    found = []
    for fact in episode:
        diagnosis = attributes_as(fact, DiagnosisAttributes)
        coded_in_stay = diagnosis.status_post and during_stay(state, diagnosis.onset)
        if coded_in_stay or history_in_stay(state, diagnosis) & done:
            found.append(fact.id)
    return found


def is_implied_treatment(
    state: EvidenceState, diagnosis: DiagnosisAttributes, done: set[str]
) -> bool:
    """A "History of X" recorded during the stay with no procedure of the episode that names
    any part of X ("History of coronary artery bypass grafting" coded on the day of admission):
    the record implies the treatment without documenting it. A procedure that shares a word with
    X ("Ligation of bilateral fallopian tubes" for "History of tubal ligation") may be it: the
    line then never says that no procedure is recorded. ``done``: ``procedure_stems``."""
    topic = history_in_stay(state, diagnosis)
    return bool(topic) and not topic & done


def implied_treatments(state: EvidenceState) -> list[ImpliedTreatment]:
    """What the stay did as the record implies it without a procedure (``is_implied_treatment``),
    except the aftermath of the stay's own event ("History of myocardial infarction" the day of
    the infarction is no treatment): what the draft says was done, flagged, and what the drug
    rules read as an indication, as a recorded procedure is."""
    done = procedure_stems(state)
    episode = listed(state, "principal", "episode")
    events = [
        f for f in episode if not history_topic(attributes_as(f, DiagnosisAttributes).display)
    ]
    own_event = set(aftermath(episode, events))
    found = []
    for f in episode:
        diagnosis = attributes_as(f, DiagnosisAttributes)
        if f.id not in own_event and is_implied_treatment(state, diagnosis, done):
            name = STATUS_TERM.sub("", plain_term(diagnosis.display)).strip()
            found.append(ImpliedTreatment(name, diagnosis.onset, f))
    return found
