"""What a sentence is checked against: the texts, values and dates of its evidence.

Built from texts (a dialogue, a note's sentences) or from facts (every value of a fact's
attributes, and the quotes that cite it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from pipeline.checking.mentions import (
    find_dates,
    find_numbers,
    normal_number,
    spelled_numbers,
    spoken_dates,
)
from pipeline.evidence.model import EvidenceState, Fact
from pipeline.text.words import WORD, stem


@dataclass(slots=True)
class Evidence:
    """What a sentence may be checked against: texts, and the values and dates they hold."""

    texts: list[str] = field(default_factory=list)
    values: set[str] = field(default_factory=set)
    quantities: set[str] = field(default_factory=set)
    dates: set[date] = field(default_factory=set)
    # For each value, what it counts where the evidence states it ("" where bare).
    kinds: dict[str, set[str]] = field(default_factory=dict)

    def _add_number(self, value: str, kind: str | None = None) -> None:
        self.values.add(value)
        self.kinds.setdefault(value, set()).add(kind or "")

    def add_text(self, text: str) -> None:
        self.texts.append(text)
        for mention in find_numbers(text):
            self._add_number(mention.value, mention.kind)
            if mention.quantity:
                self.quantities.add(mention.quantity)
        for value in spelled_numbers(text):
            self._add_number(value)
        self.dates |= {found for _, _, found in find_dates(text)} | spoken_dates(text)

    def add_value(self, value: object) -> None:
        if isinstance(value, datetime):
            self.dates.add(value.date())
        elif isinstance(value, date):
            self.dates.add(value)
        elif isinstance(value, bool):
            return
        elif isinstance(value, (int, Decimal, float)):
            self._add_number(normal_number(str(value)))
        elif isinstance(value, str):
            self.add_text(value)

    @property
    def joined(self) -> str:
        return "\n".join(self.texts)

    @property
    def stems(self) -> set[str]:
        return {stem(word) for word in WORD.findall(self.joined)}

    @classmethod
    def of_text(cls, *texts: str) -> Evidence:
        evidence = cls()
        for text in texts:
            evidence.add_text(text)
        return evidence

    @classmethod
    def of_facts(cls, facts: Iterable[Fact]) -> Evidence:
        evidence = cls()
        groups: dict[tuple[str, object], list[dict[str, object]]] = {}
        for fact in facts:
            values = fact.attributes.model_dump()
            _walk(values, evidence)
            for ref in fact.sources:
                if ref.quote:
                    evidence.add_text(ref.quote)
            groups.setdefault((fact.category, values.get("name")), []).append(values)
        for group in groups.values():
            evidence._add_counts(group)
        return evidence

    def _add_counts(self, group: list[dict[str, object]]) -> None:
        """Counts computed from cited facts of one thing (MA-RAG: numbers computed in code): how
        many ("12 doses") and on how many days ("on 7 days"). Each is added with what it counts,
        so a count never supports a dose or a measurement."""
        self._add_number(str(len(group)), "count")
        days = {
            moment.date()
            for values in group
            for moment in values.values()
            if isinstance(moment, datetime)
        }
        if days:
            self._add_number(str(len(days)), "day")


def _walk(value: object, evidence: Evidence) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in {"category", "system", "phase_rule"}:
                _walk(item, evidence)
    elif isinstance(value, list):
        for item in value:
            _walk(item, evidence)
    elif value is not None:
        evidence.add_value(value)


@dataclass(slots=True)
class FactIndex:
    """The state's facts by id and the whole state's evidence, built once per draft: checking a
    sentence then costs what its own citations cost, not a walk of every fact of the stay."""

    facts: dict[str, Fact]
    whole: Evidence

    @classmethod
    def of_state(cls, state: EvidenceState) -> FactIndex:
        facts = {fact.id: fact for fact in state.all_facts()}
        return cls(facts=facts, whole=Evidence.of_facts(facts.values()))

    def cited(self, citations: Iterable[str]) -> Evidence:
        return Evidence.of_facts(self.facts[c] for c in citations if c in self.facts)
