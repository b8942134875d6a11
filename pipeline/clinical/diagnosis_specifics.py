"""What the notes say that the principal diagnosis's coded term leaves unsaid.

A stay coded "Dependent drug abuse" whose every note records "a documented history of opioid
addiction" is an admission for opioid use disorder: the substance decides the treatment
(medication for opioid use disorder, naloxone) and the classification (ICD-10-CM codes
substance use by substance, the highest specificity the documentation supports). Five readers of
the two detoxification stays asked that the diagnosis name the opioid. The coded term stays
what it is; its line names what the notes specify, quoting the statement (the
``diagnosis_specifics`` table).
"""

from __future__ import annotations

from typing import NamedTuple

from pipeline.clinical.indications import note_mentions
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import EvidenceState, Fact, NarrativeAttributes, attributes_as


class Specified(NamedTuple):
    """What the notes name (the keyword), how the line calls it, and the statement saying it."""

    named: str
    what: str
    statement: str
    fact: Fact


def specified_in_notes(state: EvidenceState, principal: str, table: CodeTable) -> list[Specified]:
    """For a principal diagnosis a rule calls unspecific, each thing the notes name, once, with
    the first statement that names it."""
    found: dict[str, Specified] = {}
    for rule in table.extra["rules"]:
        if not names_it(principal, rule["principal"]):
            continue
        for fact, named in note_mentions(state, rule):
            statement = attributes_as(fact, NarrativeAttributes).text.strip().rstrip(".")
            found.setdefault(named, Specified(named, rule["what"], statement, fact))
    return list(found.values())
