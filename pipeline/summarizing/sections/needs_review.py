"""Needs review: one line per flag, most dangerous first, and what is not documented."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.evidence.model import (
    EvidenceState,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
)
from pipeline.evidence.summary import (
    SECTION_SPECS,
    SectionKey,
    Sentence,
    SentenceFlag,
)
from pipeline.summarizing.sections.common import cited_sentence
from pipeline.summarizing.sections.proposed_stops import proposed_stops

# Needs review, most dangerous first: a document about another patient, allergy conflicts,
# therapeutic duplication, medication
# discrepancies, then the rest; data quality last.
SEVERITY = (
    "wrong_patient_document",
    "note_instruction",
    "allergy_conflict",
    "critical_result",
    "acute_kidney_injury",
    "unstable_at_discharge",
    "conflict",
    "therapeutic_duplication",
    "choice_in_doubt",
    "stop_proposed",
    "regimen_risk",
    "expected_drug_missing",
    "schedule_in_doubt",
    "medication_discrepancy",
    "strength_discrepancy",
    "prescribed_not_ordered",
    "home_medication_not_ordered",
    "no_discharge_medications",
    "medication_not_renewed",
    "unexplained_medication_change",
    "medication_phase_unknown",
    "incomplete_medication",
    "document_error",
    "page_unread",
    "fact_rejected",
    "stale_condition",
    "loop_budget_exhausted",
)


def _severity(sentence: Sentence) -> int:
    codes = [flag.code for flag in sentence.flags]
    return min((SEVERITY.index(c) for c in codes if c in SEVERITY), default=len(SEVERITY))


def needs_review_section(
    state: EvidenceState,
    render: Any,
    stay_fact: str | None,
    undocumented: Sequence[SectionKey],
) -> list[Sentence]:
    """One line per flag (incomplete medications grouped by what they lack, cardiovascular
    drugs ordered "as needed" on one line), most severe first;
    at the end, one line naming the sections the record leaves empty (``undocumented``, read
    from the drafted sections themselves, so that the line never calls a section undocumented
    above its own lines: a kidney supplied in the stay, a care plan). The draft folds those
    sections into this line instead of printing each heading over "Not documented"."""
    sentences = []
    known = {fact.id for fact in state.all_facts()}
    incomplete: list[ReviewFlag] = []
    as_needed: list[ReviewFlag] = []
    settled = _all_held_proposed_stopped(state)
    for flag in state.flags_for_review:
        if flag.code == "home_medication_not_ordered" and settled:
            continue
        if _said_by_duplication(state, flag):
            continue
        if flag.code == "incomplete_medication":
            incomplete.append(flag)
            continue
        if flag.code == "schedule_in_doubt":
            as_needed.append(flag)
            continue
        # A rejected fact is not evidence: its flag cites the stay instead.
        citations = [f for f in flag.fact_ids if f in known] or ([stay_fact] if stay_fact else [])
        sentence = cited_sentence("needs_review", render.review(flag.reason + "."), citations)
        sentences.append(
            sentence.model_copy(
                update={"flags": [SentenceFlag(code=flag.code, reason=flag.reason)]}
            )
        )
    if incomplete:  # one cause, one line: the orders that lack part of their dosage
        orders = [tuple(flag.reason.rsplit(": ", 1)) for flag in incomplete]
        text = render.incomplete_medications(orders)
        citations = [fact_id for flag in incomplete for fact_id in flag.fact_ids]
        sentence = cited_sentence("needs_review", text, citations)
        flag_list = [SentenceFlag(code=flag.code, reason=flag.reason) for flag in incomplete]
        sentences.append(sentence.model_copy(update={"flags": flag_list}))
    sentences += _as_needed_lines(state, render, as_needed)
    sentences.sort(key=_severity)
    if undocumented and stay_fact:
        titles = [SECTION_SPECS[key].title for key in undocumented]
        sentences.append(cited_sentence("needs_review", render.not_documented(titles), [stay_fact]))
    return sentences


def _as_needed_lines(state: EvidenceState, render: Any, flags: list[ReviewFlag]) -> list[Sentence]:
    """The cardiovascular drugs ordered "as needed", one cause on one line (a reader counted
    three such lines, each repeating the question, as one of the draft's noises); each drug's own
    line in the list still carries its doubt. Drugs at discharge and orders to confirm ("if
    continued", as their flags say) get a line each: a reader caught "at discharge" said of the
    latter. One drug alone keeps its own flag's words."""
    by_when: dict[str, list[ReviewFlag]] = {}
    for flag in flags:
        when = "if continued" if " if continued as needed" in flag.reason else "at discharge"
        by_when.setdefault(when, []).append(flag)
    return [_as_needed_line(state, render, group, when) for when, group in by_when.items()]


def _as_needed_line(
    state: EvidenceState, render: Any, flags: list[ReviewFlag], when: str
) -> Sentence:
    citations = [fact_id for flag in flags for fact_id in flag.fact_ids]
    flag_list = [SentenceFlag(code=flag.code, reason=flag.reason) for flag in flags]
    if len(flags) == 1:
        text = render.review(flags[0].reason + ".")
    else:
        names = {
            f.id: attributes_as(f, MedicationAttributes).name for f in state.facts["medication"]
        }
        named = [(flag, names[i]) for flag in flags for i in flag.fact_ids if i in names]
        text = render.cardiovascular_drugs_as_needed(when, [name for _, name in named])
        # Each drug's flag in words the line states, so the draft prints none of them again.
        flag_list = [
            SentenceFlag(code=flag.code, reason=render.cardiovascular_drug_as_needed(when, name))
            for flag, name in named
        ]
    sentence = cited_sentence("needs_review", text, citations)
    return sentence.model_copy(update={"flags": flag_list})


def _said_by_duplication(state: EvidenceState, flag: ReviewFlag) -> bool:
    """Whether ``flag`` is a conflict of two orders of one drug that a duplication line names
    already ("metoprolol succinate: two active orders" beside "The same drug twice if
    continued (metoprolol)": one doubt, one line)."""
    medications = {f.id for f in state.facts["medication"]}
    if flag.code != "conflict" or not set(flag.fact_ids) <= medications:
        return False
    return any(
        other.code == "therapeutic_duplication" and set(flag.fact_ids) <= set(other.fact_ids)
        for other in state.flags_for_review
    )


def _all_held_proposed_stopped(state: EvidenceState) -> bool:
    """Whether every home drug with no discharge order has its stop proposed: "confirm whether
    each is held or stopped" beside a list that proposes each one's stop asks the question
    twice."""
    proposed = {id(change) for change, *_ in proposed_stops(state)}
    held = [c for c in state.medications.changes if c.kind == "held_or_stopped"]
    return bool(held) and all(id(c) in proposed for c in held)
