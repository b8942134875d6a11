"""When the list proposes to stop a patient's analgesic and chronic pain is on record, how the
pain is treated without it is asked: a reader called two analgesics proposed stopped, for a
patient in pain 7/10 with no other pain plan, a medication error.

From the shipped ``pain_plan`` table (its header names the guidelines): the chronic pain
conditions, and the drug classes (of the ``drug_classes`` table) whose stop leaves them
untreated. One Needs review line, never a decision: the physician may keep the drug after all.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.risk_flags import active_diagnoses, drug_names, having, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    ReviewFlag,
    attributes_as,
)
from pipeline.text.rendering import plain_term


def _proposed_stopped(flags: Sequence[ReviewFlag], drugs: Sequence[Fact]) -> list[Fact]:
    """The ``drugs`` a stop is proposed for: cited and named by a ``stop_proposed`` flag (a note's
    home list is one fact for all its drugs, so the name tells which)."""
    stops = [flag for flag in flags if flag.code == "stop_proposed"]
    return [
        f
        for f in drugs
        if any(f.id in flag.fact_ids and drug_names([f]) in flag.reason for flag in stops)
    ]


def analgesic_ingredients(
    drug_table: CodeTable, pain: CodeTable, *, after_operation: bool = False
) -> list[str]:
    """The ingredients of the pain table's analgesic classes (opioids, NSAIDs), and, after an
    operation, its ``postoperative_analgesics`` too (acetaminophen relieves the pain of a wound,
    where a chronic pain condition's stop is about the classes alone)."""
    classes: dict[str, list[str]] = drug_table.extra["classes"]
    named = [i for name in pain.extra["analgesic_classes"] for i in classes[name]]
    return [*named, *pain.extra["postoperative_analgesics"]] if after_operation else named


def pain_plan_flags(
    state: EvidenceState,
    flags: Sequence[ReviewFlag],
    drugs: Sequence[Fact],
    drug_table: CodeTable,
    pain: CodeTable,
) -> list[ReviewFlag]:
    """One line over the analgesics among ``drugs`` (those going home or at home) that ``flags``
    propose to stop, when a chronic pain condition is on record and no other analgesic of
    ``drugs`` remains: an ibuprofen stopped beside the opioids that treat the pain leaves it
    treated (a reader called the line then a misattribution)."""
    analgesics = analgesic_ingredients(drug_table, pain)
    stopped = having(_proposed_stopped(flags, drugs), analgesics)
    # By the fact, not its id: a note's home list is one id for all its drugs.
    remaining = having([f for f in drugs if f not in stopped], analgesics)
    if not stopped or remaining:
        return []
    conditions = active_diagnoses(state, lambda term: pain.matches(None, term))
    if not conditions:
        return []
    named = "; ".join(
        dict.fromkeys(plain_term(attributes_as(f, DiagnosisAttributes).display) for f in conditions)
    )
    reason = (
        f"A chronic pain condition on record ({named}) and its analgesics proposed stopped "
        f"({drug_names(stopped)}): plan how the pain is treated without them"
    )
    return [risk_flag("pain-plan", reason, [*stopped, *conditions])]
