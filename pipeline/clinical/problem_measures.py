"""A problem on the list that its own defining measure no longer bears out.

Some problems are defined by a measure: obesity is a body mass index of 30 or more (WHO; the
``problem_measures`` table). A problem list keeps "Body mass index 30+ - obesity" recorded in
2020 beside a BMI of 27 measured the week before admission, and readers read the pair as a
contradiction the draft left standing. Like a kidney disease stage beside the current eGFR
(``pipeline.clinical.kidney_function``), the problem keeps its line, which says what the
latest measure reads, cited: the physician decides whether the entry still holds.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pipeline.clinical.risk_flags import current_results, latest_fact
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    attributes_as,
)


class MeasureBelow(NamedTuple):
    """The latest value of a problem's defining measure, below the least that defines it."""

    fact: Fact
    measure: str
    at_least: Any


def measure_below(state: EvidenceState, problem: str, measures: CodeTable) -> MeasureBelow | None:
    """For a problem a rule of the table names (the first that does), its measure's latest value
    (in the stay or before it) when that value is below the rule's ``at_least``."""
    rule = next((r for r in measures.extra["rules"] if names_it(problem, r["problem"])), None)
    if rule is None:
        return None
    latest = latest_fact(current_results(state, [rule["code"]]))
    value = attributes_as(latest, LabResultAttributes).value if latest is not None else None
    if latest is None or value is None or value >= rule["at_least"]:
        return None
    return MeasureBelow(latest, rule["measure"], rule["at_least"])
