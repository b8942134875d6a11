"""The line in place of a principal diagnosis when the stay has none: a clinical reason coded on
the encounter alone, an elective admission for care the episode gave, or the flagged line that
says what the stay was coded as, what was done and what the record offers for the physician to
name the problem (``pipeline.clinical.transplant`` for a transplant's organ)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.clinical.clinical_terms import (
    REQUEST_TERM,
    STATUS_TERM,
    elective_care,
    status_subject,
    topic_stems,
)
from pipeline.clinical.episode_diagnoses import ImpliedTreatment, implied_treatments, listed
from pipeline.clinical.tables import CodeTable
from pipeline.clinical.transplant import transplant_indication
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    OrganHistoryAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.summarizing.sections.common import (
    cited_sentence,
    significant_procedures,
    supplied_in_stay,
)
from pipeline.summarizing.sections.operations import IMPLIED_TREATMENT
from pipeline.text.rendering import plain_term


def in_place_of_principal(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable, CodeTable],
    stay_fact: Fact | None,
) -> list[Sentence]:
    """With no principal diagnosis: the stay's clinical reasons coded on the encounter alone,
    else the flagged line that says the principal diagnosis is not documented."""
    if stay_fact is None:
        return []
    return _reason_as_principal(state, render, stay_fact) or _principal_not_documented(
        state, render, tables, stay_fact
    )


def _reason_as_principal(state: EvidenceState, render: Any, stay_fact: Fact) -> list[Sentence]:
    """A clinical reason coded on the encounter with no Condition for it ("Appendicitis") is
    the principal diagnosis all the same: a list of "History of appendectomy" alone would read
    as if the stay had none."""
    stay = attributes_as(stay_fact, EncounterAttributes)
    listed_already = {
        plain_term(attributes_as(f, DiagnosisAttributes).display).lower()
        for f in listed(state, "episode")
    }
    clinical = [
        r
        for r in stay.reasons
        if not STATUS_TERM.search(plain_term(r)) and plain_term(r).lower() not in listed_already
    ]
    return [
        cited_sentence("diagnoses", render.reason_as_principal(reason), [stay_fact.id])
        for reason in clinical
    ]


def _principal_not_documented(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable, CodeTable],
    stay_fact: Fact,
) -> list[Sentence]:
    """When the stay has no principal diagnosis and no clinical reason (only status or
    administrative terms: "Sterilization requested", "Awaiting transplantation of kidney"), one
    flagged line: what the stay was coded as, and what the episode's procedures say was done (or
    that the record documents none), what was supplied in the stay (a kidney graft), the active
    problems the coded terms name (exactly one leads the line) and, for a transplant, what the
    earlier record says of the organ (``pipeline.clinical.transplant``).
    ``tables``: the routine procedures, the implants and the transplanted organs."""
    routine, implant_table, organs = tables
    stay = attributes_as(stay_fact, EncounterAttributes)
    if any(not STATUS_TERM.search(plain_term(reason)) for reason in stay.reasons):
        return []
    coded = [
        f
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes)
        and (f.attributes.principal or f.attributes.listing == "episode")
        and STATUS_TERM.search(plain_term(f.attributes.display))
    ]
    said = _status_terms(stay, coded)
    done = significant_procedures(state, routine)
    # A status recorded during the stay with no procedure for it is what the stay did, as the
    # record implies it: said first, before what the stay was coded as.
    implied = [] if done else implied_treatments(state)
    elective = _elective_admission(render, stay_fact, done, implied)
    if elective:
        return elective
    supplied = supplied_in_stay(state, implant_table)
    related = _problems_named(state, [term for term, _ in said.values()])
    shown_already = {
        plain_term(attributes_as(f, DiagnosisAttributes).display).lower() for f in related
    }
    history = [
        f
        for f in transplant_indication(state, [term for term, _ in said.values()], organs)
        if plain_term(attributes_as(f, OrganHistoryAttributes).text).lower() not in shown_already
    ]
    shown = {plain_term(attributes_as(f, DiagnosisAttributes).display).lower() for *_, f in implied}
    # The one problem the coded status names is the clinical problem the stay treated; with
    # two or more the physician chooses.
    from_problem = len(related) == 1
    template = render.principal_from_problem if from_problem else render.principal_not_documented
    text = template(
        [(term, onset) for key, (term, onset) in said.items() if key not in shown],
        [f.attributes for f in done],
        [f.attributes for f in supplied],
        [f.attributes for f in related],
        [(what, onset) for what, onset, _ in implied],
        [f.attributes for f in history],
    )
    flag = (_from_problem_flag if from_problem else _not_documented_flag)(bool(done), bool(implied))
    cited = [stay_fact.id, *(f.id for f in coded + done + supplied + related + history)]
    line = cited_sentence("diagnoses", text, cited)
    return [line.model_copy(update={"flags": [flag]})]


def _status_terms(
    stay: EncounterAttributes, coded: list[Fact]
) -> dict[str, tuple[str, datetime | None]]:
    """Each status term the stay is coded as, once, by its plain wording. A status recorded
    during the stay ("History of renal transplant", onset on day 2) is a treatment the record
    implies but does not document: it keeps that date."""
    said: dict[str, tuple[str, datetime | None]] = {
        plain_term(term).lower(): (term, None) for term in [*stay.reasons, *stay.arranged_reasons]
    }
    for fact in coded:
        diagnosis = attributes_as(fact, DiagnosisAttributes)
        during = (
            diagnosis.onset
            if stay.start and diagnosis.onset and diagnosis.onset >= stay.start
            else None
        )
        key = plain_term(diagnosis.display).lower()
        if key not in said or during is not None:
            said[key] = (diagnosis.display, during)
    return said


def _not_documented_flag(done: bool, implied: bool) -> SentenceFlag:
    """The flag on the line: no clinical diagnosis, no procedure where none was recorded, and
    what to confirm where the record implies a treatment."""
    return SentenceFlag(
        code="principal_not_documented",
        reason="no clinical diagnosis is recorded as the reason for this stay"
        + ("" if done else ", and no procedure of the episode is recorded")
        + (
            ": confirm the treatment the record implies, its date, and the diagnosis it treats"
            if implied
            else ""
        ),
    )


def _from_problem_flag(done: bool, implied: bool) -> SentenceFlag:
    """The flag on a line led by the one problem the coded status names: the principal
    diagnosis is the problem list's, not coded for the stay, and what else to confirm. With
    neither a procedure nor an implied one, the line itself says "no procedure of the episode
    documented", and the flag does not say it again."""
    return SentenceFlag(
        code="principal_from_problem_list",
        reason="the principal diagnosis is taken from the problem list, the one problem that "
        "the stay's coding names"
        + ("; no procedure of the episode is recorded" if implied and not done else "")
        + (
            ": confirm the diagnosis, the treatment the record implies and its date"
            if implied
            else ": confirm the diagnosis"
        ),
    )


def _elective_admission(
    render: Any,
    stay_fact: Fact,
    done: list[Fact],
    implied: list[ImpliedTreatment],
) -> list[Sentence]:
    """A stay coded only as a request for care the episode gave ("Sterilization requested", a
    ligation done): an elective admission, led by the care asked for as the clinical problem
    ("Elective sterilization"). Given as the record implies it (its "History of" recorded that
    day, no procedure), the line leads with the request the record documents, says the care is
    implied, and is flagged: an inference never leads the diagnosis (a paired reader preferred
    it so where the operation is not recorded)."""
    stay = attributes_as(stay_fact, EncounterAttributes)
    reasons = [*stay.reasons, *stay.arranged_reasons]
    if not (done or implied) or not reasons:
        return []
    if not all(REQUEST_TERM.search(plain_term(r)) for r in reasons):
        return []
    given = [(what, onset) for what, onset, _ in implied]
    care = list(dict.fromkeys(elective_care(r) for r in reasons))
    text = render.elective_admission(care, reasons, [f.attributes for f in done], given)
    cited = [stay_fact.id, *(f.id for f in done), *(f.id for *_, f in implied)]
    line = cited_sentence("diagnoses", text, cited)
    return [line.model_copy(update={"flags": [IMPLIED_TREATMENT] if implied else []})]


def _problems_named(state: EvidenceState, coded: list[str]) -> list[Fact]:
    """The active problems a status term's subject names ("Awaiting transplantation of kidney":
    the kidney disease on the list; "History of aortic valve replacement": the aortic stenosis),
    for the physician to choose from; exactly one is the clinical problem the stay treated and
    leads the line, flagged as taken from the problem list."""
    topics = {word for term in coded for word in status_subject(term)}
    problems = [
        (f, plain_term(attributes_as(f, DiagnosisAttributes).display))
        for f in listed(state, "active")
    ]
    # A status or finding on the list is about the same words, never the problem it names.
    return [
        f for f, term in problems if not STATUS_TERM.search(term) and topics & topic_stems(term)
    ]
