"""What tells a current home medication from a stale order: when the stay began, how recent an
order must be (the renewal window), the words of the stay's notes, and the stay's own home
medication list."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from pipeline.clinical.medications import ingredients
from pipeline.clinical.note_medications import NotedDrug, noted_drugs
from pipeline.evidence.model import EvidenceState, MedicationAttributes, NarrativeAttributes, aware
from pipeline.settings import RENEWAL_WINDOW


@dataclass(frozen=True, slots=True)
class StayContext:
    """What tells a current home medication from a stale order: when the stay began, how recent
    an order must be, and the words of the stay's notes."""

    admitted: datetime | None = None
    renewal_window: timedelta = RENEWAL_WINDOW
    notes_text: str = ""
    # The first line of the stay's home medication list and the drugs the list names; None when
    # no note of the stay lists home medications.
    home_list: tuple[str, tuple[NotedDrug, ...]] | None = None

    def recent(self, ordered: datetime) -> bool:
        """Ordered within the window before admission (or since)."""
        return self.admitted is not None and (
            aware(ordered) >= aware(self.admitted) - self.renewal_window
        )

    def renewed(self, attributes: MedicationAttributes) -> bool:
        """An order of the stay for a drug last ordered within the window before admission."""
        before = attributes.last_ordered_before
        return before is not None and self.recent(before)

    def stale(self, attributes: MedicationAttributes) -> bool:
        """Last ordered before the window and mentioned in no note of the stay."""
        ordered = attributes.authored_on
        if self.admitted is None or ordered is None or self.recent(ordered):
            return False
        return not mentioned(attributes.name, self.notes_text)

    def left_off_home_list(self, attributes: MedicationAttributes) -> bool:
        """The stay's home medication list names no ingredient of the drug."""
        return self.home_list is not None and not any(
            drug.matches(attributes.name) for drug in self.home_list[1]
        )


def mentioned(name: str, text: str) -> bool:
    """Whether every ingredient of the drug appears as a word in ``text``: a note naming
    hydrochlorothiazide does not confirm an old hydrochlorothiazide/lisinopril order."""
    return all(
        re.search(rf"\b{re.escape(ingredient)}\b", text, re.IGNORECASE) is not None
        for ingredient in ingredients(name)
    )


def stay_context(state: EvidenceState, renewal_window: timedelta = RENEWAL_WINDOW) -> StayContext:
    """The stay's start and its notes' words (never a note about another patient)."""
    stay = state.stay()
    notes = "\n".join(
        page.text
        for document in state.documents
        if not document.other_patient
        for page in document.pages
    )
    # A drug the stay's plan prescribes is the stay's own order, not word that an old order of
    # its ingredient is still taken (new metoprolol tartrate beside an old succinate order).
    for fact in state.facts.get("medication_list", []):
        attributes = fact.attributes
        if isinstance(attributes, NarrativeAttributes) and attributes.list_kind == "prescribed":
            notes = notes.replace(attributes.text, "")
    admitted = stay.start if stay is not None else None
    lines = [
        fact
        for fact in state.facts.get("medication_list", [])
        if isinstance(fact.attributes, NarrativeAttributes)
        and (fact.attributes.list_kind or "home") == "home"
    ]
    home_list = (lines[0].id, tuple(noted_drugs(lines, "home"))) if lines else None
    return StayContext(
        admitted=admitted, renewal_window=renewal_window, notes_text=notes, home_list=home_list
    )
