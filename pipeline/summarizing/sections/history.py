"""A "History of X" recorded during the stay: the coded after-state of a procedure of the
episode (cited on the first line), the aftermath of the stay's own event (cited on the principal
diagnosis's line), or, with no procedure for it, a treatment the record implies but does not
document (flagged)."""

from __future__ import annotations

from pipeline.clinical.diagnoses import history_topic, topic_stems
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    Fact,
    attributes_as,
)
from pipeline.evidence.summary import SentenceFlag


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
