"""The drugs a note of the stay names in a medication list, matched to orders by ingredient.

A note says what the patient took at home (an H&P's "Medications") or what was prescribed
("The patient was prescribed the following medications"); the orders say what the EHR recorded.
Reconciliation needs both: a home drug no discharge order carries is asked about ("held or
stopped? confirm"), and a drug the note prescribes is never called "not continued". Matching is
by ingredient words, so "lisinopril 10 mg oral tablet" in a note is the order "Lisinopril 10 MG
Oral Tablet", and "naproxen sodium" is naproxen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pipeline.clinical.medications import drug_key
from pipeline.clinical.medications import ingredients as all_ingredients
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    NarrativeAttributes,
    PrescriptionAttributes,
    attributes_as,
)

_NONE_LISTED = re.compile(r"\bno (active |current |home )?medications\b|^none\b", re.IGNORECASE)
# Words of a drug name that say nothing about its ingredient.
_SALTS = frozenset(
    "sodium potassium calcium magnesium hydrochloride hcl succinate tartrate besylate maleate "
    "citrate acetate sulfate phosphate hr extended release delayed oral tablet capsule".split()
)


def ingredients(name: str) -> set[str]:
    """The ingredient words of a drug name ("naproxen sodium 220 MG Oral Tablet" → naproxen)."""
    return {word for word in drug_key(name).split() if word not in _SALTS and len(word) > 2}


def lists_none(text: str) -> bool:
    """Whether a medication list's line says the patient takes none ("No Active Medications")."""
    return bool(_NONE_LISTED.search(text.strip()))


def list_items(text: str) -> list[str]:
    """The drugs one line of a medication list names; none for "no active medications"."""
    if lists_none(text):
        return []
    return [item.strip(" -*•\t.") for item in text.split(";") if item.strip(" -*•\t.")]


@dataclass(frozen=True, slots=True)
class NotedDrug:
    """A drug as a note's list names it, with the list's line (a fact) that says so."""

    text: str
    words: frozenset[str]
    line: Fact

    def matches(self, name: str) -> bool:
        return same_drug(self.text, name)


def same_drug(name: str, other: str) -> bool:
    """The same drug: every ingredient of each is one of the other's (a combination is each of
    its parts: the note's oxycodone is not the order's acetaminophen/oxycodone)."""
    return set(all_ingredients(name)) == set(all_ingredients(other))


def noted_drugs(facts: Iterable[Fact], kind: Literal["home", "prescribed"]) -> list[NotedDrug]:
    """Each drug the notes' lists of this kind name, once (the first line that names it)."""
    found: dict[frozenset[str], NotedDrug] = {}
    for fact in facts:
        attributes = fact.attributes
        if (
            not isinstance(attributes, NarrativeAttributes)
            or attributes.category != "medication_list"
        ):
            continue
        if (attributes.list_kind or "home") != kind:
            continue
        for item in list_items(attributes.text):
            words = frozenset(ingredients(item))
            if words and words not in found:
                found[words] = NotedDrug(text=item, words=words, line=fact)
    return list(found.values())


def last_prescribed(state: EvidenceState, name: str) -> Fact | None:
    """The latest ended prescription of the same drug (every ingredient the same): how a home
    drug with no order was last taken (``fhir_mapping.prescriptions``)."""
    return _latest_prescription(state.facts["prescription"], name)


def not_a_home_drug(prescription: PrescriptionAttributes) -> Literal["office", "finished"] | None:
    """What a drug's latest ended prescription says it is when it is no home drug to hold or
    stop, though later notes' lists carry its name: an office treatment a clinician gave at the
    visit that wrote it (a dentist's fluoride gel), or a course completed for an illness that
    resolved before the stay (a cough syrup for a bronchitis; the best possible medication
    history). None for a home drug."""
    if prescription.given_at_visit:
        return "office"
    return "finished" if prescription.course_for is not None else None


def taken_at_home(facts: Iterable[Fact], drug: NotedDrug) -> bool:
    """A drug of a note's home list that its latest ended prescription does not call an office
    treatment or a finished course."""
    last = _latest_prescription((f for f in facts if f.category == "prescription"), drug.text)
    return last is None or not_a_home_drug(attributes_as(last, PrescriptionAttributes)) is None


def _latest_prescription(prescriptions: Iterable[Fact], name: str) -> Fact | None:
    same = [
        f for f in prescriptions if same_drug(attributes_as(f, PrescriptionAttributes).name, name)
    ]
    return max(
        same, key=lambda f: attributes_as(f, PrescriptionAttributes).authored_on, default=None
    )
