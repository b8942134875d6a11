"""The discharge medications with their changes, and the allergy list."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.strengths import strength_fall
from pipeline.evidence.model import (
    AllergyAttributes,
    EvidenceState,
    MedicationAttributes,
    MedicationChange,
    NarrativeAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.summarizing.sections.choices import choice_groups, choice_line
from pipeline.summarizing.sections.common import cited_sentence
from pipeline.summarizing.sections.given import given_lines
from pipeline.summarizing.sections.proposed_stops import proposed_stop_lines, proposed_stops
from pipeline.summarizing.sections.unordered import listed_lines, notes_listing_none

# A doubt about one drug (a cardiovascular drug ordered "as needed", a drug past its age limit)
# is shown on that drug's line as well as in Needs review (where the checker reads its words): a
# list line that says "as needed" is read as an instruction by whoever copies it.
LINE_DOUBTS = frozenset({"regimen_risk", "schedule_in_doubt", "strength_discrepancy"})
# A duplication names every drug it involves, and sits on each of their lines, whose status then
# reads "TO CONFIRM": an ACE inhibitor CONTINUED beside an ARB must not read as settled where the
# list is copied, since one of the two is likely to stop. A choice in doubt (two statins, the
# stronger one the order to confirm) is shared the same way, but proposes no stop.
SHARED_DOUBTS = frozenset({"therapeutic_duplication", "choice_in_doubt"})


def doubts_about(state: EvidenceState, fact_id: str | None) -> list[SentenceFlag]:
    """Each doubt about one drug alone (a flag citing no other medication), and each
    duplication the drug is part of, by its headline without the drug's own name: the whole
    question is Needs review's, said once there (every line repeating it word for word was a
    third of a draft's noise)."""
    if fact_id is None:
        return []
    medications = {f.id for f in state.facts["medication"]}
    name = attributes_as(state.fact(fact_id), MedicationAttributes).name
    return [
        SentenceFlag(code=flag.code, reason=_unnamed(flag.reason.split(": ", 1)[0], name))
        for flag in state.flags_for_review
        if (
            flag.code in LINE_DOUBTS and [i for i in flag.fact_ids if i in medications] == [fact_id]
        )
        or (flag.code in SHARED_DOUBTS and fact_id in flag.fact_ids)
    ]


def _unnamed(headline: str, name: str) -> str:
    """The headline without the drug's name it opens with: on the drug's own line the name is
    the line's first words, and a flag's reason never repeats its sentence ("prasugrel 10 MG
    Oral Tablet at discharge with no PCI recorded" on prasugrel's line)."""
    if headline.lower().startswith(name.lower() + " "):
        return headline[len(name) :].strip()
    return headline


def superseded(state: EvidenceState) -> dict[str, list[str]]:
    """Each order to confirm that a discharge order duplicates (the same drug or class), with
    those discharge orders: started in this stay, or home drugs the notes confirm. The order to
    confirm is proposed stopped on its own line, since "confirm whether still taken" beside a new
    beta blocker leaves two beta blockers to whoever copies the list."""
    to_confirm = state.medications.unconfirmed()
    going_home = set(state.medications.discharge) - set(to_confirm)
    found: dict[str, list[str]] = {}
    for order in to_confirm:
        newer = [
            fact_id
            for flag in state.flags_for_review
            if flag.code == "therapeutic_duplication" and order in flag.fact_ids
            for fact_id in flag.fact_ids
            if fact_id in going_home
        ]
        if newer:
            found[order] = list(dict.fromkeys(newer))
    return found


def _superseded_lines(
    state: EvidenceState, render: Any, orders: dict[str, list[str]]
) -> list[Sentence]:
    how = {c.discharge: c.kind for c in state.medications.changes if c.discharge}
    lines = []
    for order, newer in orders.items():
        # "ordered in this stay" only for a drug the stay started or changed; a home drug the
        # notes confirm goes home CONTINUED, and is said so.
        going = [(state.fact(i).attributes, how.get(i) in ("new", "changed")) for i in newer]
        stopped = attributes_as(state.fact(order), MedicationAttributes)
        falls = [
            fall
            for kept, _ in going
            if isinstance(kept, MedicationAttributes) and (fall := strength_fall(stopped, kept))
        ]
        text = render.superseded(stopped, going, falls)
        line = cited_sentence("medications", text, [order, *newer])
        lines.append(line.model_copy(update={"flags": [*line.flags, *doubts_about(state, order)]}))
    return lines


# The change kinds listed together on one line each, not one line per drug.
_LISTED_KINDS = frozenset(
    {"unconfirmed", "not_on_home_list", "held_or_stopped", "prescribed_not_ordered", "in_place"}
)


def medications_section(state: EvidenceState, render: Any) -> list[Sentence]:
    """One line per drug going home (continued, changed, new, stopped), the orders and drugs
    proposed stopped, then what the record calls for that none of them is, then the lines that
    list drugs to decide about, then what was given in the stay."""
    proposals = proposed_stops(state)
    if proposals:
        # The drugs proposed stopped are said there alone, never on a list line as well.
        proposed = {id(change) for change, *_ in proposals}
        kept = [c for c in state.medications.changes if id(c) not in proposed]
        state = state.model_copy(
            update={"medications": state.medications.model_copy(update={"changes": kept})}
        )
    replaced = superseded(state)
    going = _going_lines(state, render)
    going += _superseded_lines(state, render, replaced)
    going += proposed_stop_lines(state, render, proposals)
    others = listed_lines(state, render, replaced) + given_lines(state, render)
    missing = _expected_missing(state, render)
    if not (going or others):
        return _none_listed(state, render) + missing
    return going + missing + others


def _going_lines(state: EvidenceState, render: Any) -> list[Sentence]:
    """A line per drug going home, but one line for the drugs a duplication makes a choice
    between (``choices``), where the first of them stood."""
    lines = {
        id(change): _change_line(state, render, change)
        for change in state.medications.changes
        if change.kind not in _LISTED_KINDS
    }
    merged: set[int] = set()
    for headline, changes in choice_groups(state):
        # A drug in two duplications (an opioid-NSAID combination) makes one choice only.
        keys = [id(c) for c in changes]
        if merged & set(keys) or not all(key in lines for key in keys):
            continue
        for key in keys:
            del lines[key]
        members = [_change_line(state, render, c, in_choice=True) for c in changes]
        lines[keys[0]] = choice_line(render, headline, members)
        merged |= set(keys)
    order = [id(c) for c in state.medications.changes]
    return [lines[key] for key in order if key in lines]


def _expected_missing(state: EvidenceState, render: Any) -> list[Sentence]:
    """A drug the record calls for that no line carries (an immunosuppressant after a
    transplant) is said in the list too, where it is copied from (a warning only in Needs review
    left the list reading as complete): the line states what is missing and its flag asks for
    the decision, so that it reads whole once Needs review is cleared at signing."""
    lines = []
    for flag in state.flags_for_review:
        if flag.code != "expected_drug_missing":
            continue
        missing, _, ask = flag.reason.partition(": ")
        line = cited_sentence("medications", render.expected_missing(missing), flag.fact_ids)
        doubt = SentenceFlag(code=flag.code, reason=ask)
        lines.append(line.model_copy(update={"flags": [*line.flags, doubt]}))
    return lines


def _change_line(
    state: EvidenceState, render: Any, change: MedicationChange, in_choice: bool = False
) -> Sentence:
    """A drug's line. ``in_choice``: a drug of a choice line, whose "TO CONFIRM" that line
    says once for all its drugs."""
    before = state.fact(change.admission).attributes if change.admission else None
    after = state.fact(change.discharge).attributes if change.discharge else None
    citations = [fact_id for fact_id in (change.admission, change.discharge) if fact_id]
    doubts = doubts_about(state, change.discharge)
    in_doubt = any(doubt.code == "schedule_in_doubt" for doubt in doubts)
    # A line with a doubt never reads as settled: readers read "CONTINUED: Furosemide … (schedule
    # to confirm)" and "NEW: valsartan …" beside their flags as instructions already decided.
    to_confirm = bool(doubts) and not in_choice
    text = render.medication_change(change, before, after, in_doubt, to_confirm)
    line = cited_sentence("medications", text, citations)
    return line.model_copy(update={"flags": [*line.flags, *doubts]})


def _none_listed(state: EvidenceState, render: Any) -> list[Sentence]:
    """A stay with no medication in the record whose note lists none says so, quoted: "Not
    documented" would read as a gap where the record documents an absence."""
    if state.facts["medication"]:
        return []
    said = notes_listing_none(state)
    if not said:
        return []
    text = render.none_listed(attributes_as(said[0], NarrativeAttributes).text)
    return [cited_sentence("medications", text, [said[0].id])]


def allergies_section(state: EvidenceState, render: Any) -> list[Sentence]:
    facts = state.facts["allergy"]
    none_known = [
        f
        for f in facts
        if isinstance(f.attributes, AllergyAttributes) and f.attributes.no_known_allergies
    ]
    recorded = [f for f in facts if f not in none_known]
    # One line, as a clinician writes an allergy list.
    sentences = (
        [
            cited_sentence(
                "allergies",
                render.allergies([f.attributes for f in recorded]),
                [f.id for f in recorded],
            )
        ]
        if recorded
        else []
    )
    # "No known allergies" beside recorded ones (a templated note) is the Needs review
    # conflict, said once there, never a line of the list that contradicts it.
    if none_known and not sentences:
        sentences.append(
            cited_sentence(
                "allergies",
                render.none_known(none_known[0].attributes),
                [none_known[0].id],  # the statement quoted; other notes repeat a template
            )
        )
    return sentences
