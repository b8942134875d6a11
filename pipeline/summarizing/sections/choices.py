"""Drugs going home that a duplication makes a choice between, on one line of the list.

Two drugs of one class ordered for home with neither older than the other (an ACE inhibitor and
an ARB written the same day) are a choice for the prescriber, never two drugs continued: the
list is what is copied, and a reader read "CONTINUED, TO CONFIRM" on both as continuing dual
renin-angiotensin blockade (ONTARGET; KDIGO 2021: not given together). The line names each
drug as its own line would, joined by "or"; the duplication's flag, and each drug's own
doubts, stay on it. Never a decision: which one continues is the physician's.
"""

from __future__ import annotations

from typing import Any

from pipeline.evidence.model import EvidenceState, MedicationChange
from pipeline.evidence.summary import Sentence, SentenceFlag
from pipeline.summarizing.sections.common import cited_sentence

CHOICE_LEFT = "not both: the prescriber chooses which one continues"
# The changes whose drug goes home on a line of its own.
_GOING = frozenset({"new", "continued", "changed"})


def choice_groups(state: EvidenceState) -> list[tuple[str, list[MedicationChange]]]:
    """Each duplication at discharge whose drugs all go home on lines of their own (none an
    order to confirm, none a home drug held), with its headline and those drugs' changes."""
    going = {c.discharge: c for c in state.medications.changes if c.kind in _GOING and c.discharge}
    medications = {f.id for f in state.facts["medication"]}
    groups = []
    for flag in state.flags_for_review:
        drugs = [i for i in flag.fact_ids if i in medications]
        if flag.code == "therapeutic_duplication" and len(drugs) > 1 and set(drugs) <= set(going):
            groups.append((flag.reason.split(": ", 1)[0], [going[i] for i in drugs]))
    return groups


def choice_line(render: Any, headline: str, lines: list[Sentence]) -> Sentence:
    """One line for the drugs of a choice, each as its own line says it (rendered without its
    "TO CONFIRM", which the choice says once for all of them), with the class the duplication
    names ("ACE inhibitor or ARB")."""
    kind = headline.rsplit("(", 1)[-1].removesuffix(")") if "(" in headline else headline
    said = [line.text.removesuffix(".") for line in lines]
    text = render.one_of(kind, said)
    # The line says the duplication already ("two of one class at discharge"): its flag says
    # what is left to do, never the line again (a flag that repeats its sentence is noise).
    chosen = SentenceFlag(code="therapeutic_duplication", reason=CHOICE_LEFT)
    flags: list[SentenceFlag] = []
    for line in lines:
        for flag in line.flags:
            kept = chosen if flag.reason == headline else flag
            if kept not in flags:
                flags.append(kept)
    line = cited_sentence("medications", text, [i for line in lines for i in line.citations])
    return line.model_copy(update={"flags": flags})
