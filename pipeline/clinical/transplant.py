"""A transplant's indication as the earlier record shows it, and its graft's function.

A stay coded only by a transplant status ("Awaiting transplantation of kidney", "History of
renal transplant") names no disease. The organ is read from those terms, and the earlier
record's encounter reasons and active care plans about that organ (``transplant_organs`` table:
its words for the organ's disease and its replacement therapy) are the indication the physician
names the principal diagnosis from: cited, never chosen from. A graft that a laboratory result
measures (a kidney's creatinine) and that the stay never measured is said to be so, and how
often the guideline measures it after discharge is named where no review is arranged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    OrganHistoryAttributes,
    attributes_as,
)
from pipeline.text.rendering import plain_term

_TRANSPLANT = re.compile(r"\btransplant", re.IGNORECASE)


def _words(words: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(rf"\b{re.escape(word)}" for word in words), re.IGNORECASE)


def organs_named(terms: Iterable[str], organs: CodeTable) -> list[str]:
    """The organs the transplant terms among ``terms`` name, by the organ's name or its words
    ("History of renal transplant": kidney)."""
    table: dict[str, list[str]] = organs.extra["organs"]
    said = [plain_term(term) for term in terms if _TRANSPLANT.search(term)]
    return [
        organ
        for organ, words in table.items()
        if any(_words([organ, *words]).search(term) for term in said)
    ]


def transplant_indication(
    state: EvidenceState, terms: Iterable[str], organs: CodeTable
) -> list[Fact]:
    """The earlier record's facts about the organs the transplant terms name, oldest first."""
    table: dict[str, list[str]] = organs.extra["organs"]
    named = organs_named(terms, organs)
    if not named:
        return []
    about = _words([word for organ in named for word in (organ, *table[organ])])
    found = [
        f
        for f in state.facts["organ_history"]
        if about.search(attributes_as(f, OrganHistoryAttributes).text)
    ]
    return sorted(found, key=_dated)


def _dated(fact: Fact) -> str:
    when = attributes_as(fact, OrganHistoryAttributes).when
    return when.isoformat() if when else ""


def unmeasured_grafts(
    state: EvidenceState, transplants: Iterable[tuple[str, list[str]]], organs: CodeTable
) -> list[tuple[str, str, list[str]]]:
    """Each treatment of the stay (its term and the facts that record it) that transplanted a
    graft no result of the stay measures, though a result would (``graft_function``: a kidney's
    creatinine or eGFR, KDIGO 2009 13.1.1 daily until discharge): the term, what would measure
    it, and the facts. A kidney
    recipient's draft with no kidney function read as one whose graft was known to work."""
    measures: dict[str, dict[str, Any]] = organs.extra.get("graft_function", {})
    measured = {
        result.code.code
        for f in state.facts["lab_result"]
        if (result := attributes_as(f, LabResultAttributes)).code is not None
        and not result.baseline
    }
    unmeasured = []
    for term, fact_ids in transplants:
        for organ in organs_named([term], organs):
            graft = measures.get(organ)
            if graft is not None and not measured & set(graft["codes"]):
                unmeasured.append((term, str(graft["measure"]), fact_ids))
    return unmeasured


def graft_follow_up(terms: Iterable[str], organs: CodeTable) -> list[str]:
    """For the grafts the transplant terms among ``terms`` name, how often the guideline
    measures their function after discharge (``graft_function``'s ``after_discharge``: a
    kidney's creatinine two to three times a week in weeks 2 to 4), each once: what the review
    a transplant's discharge arranges is for."""
    measures: dict[str, dict[str, Any]] = organs.extra.get("graft_function", {})
    schedules = [
        str(measures[organ]["after_discharge"])
        for organ in organs_named(terms, organs)
        if "after_discharge" in measures.get(organ, {})
    ]
    return list(dict.fromkeys(schedules))
