"""Home drugs that harm when stopped abruptly and that no discharge order carries, from the
shipped ``abrupt_stop`` table: an opioid (withdrawal), a beta blocker (rebound angina), insulin
(ketoacidosis)… The reconciliation asks of every home drug with no discharge order whether it is
held or stopped; for these the answer cannot be silence, so one Needs review line names each with
its harm. Never a decision: the physician continues it, or plans how it stops."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.risk_flags import drug_names, having, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import Fact, ReviewFlag


def abrupt_stop_flags(held: Sequence[Fact], table: CodeTable) -> list[ReviewFlag]:
    """One line over the ``held`` home drugs (no discharge order) of the table's groups, each
    group's drugs together: "X; Y; Z (each an opioid: withdrawal and uncontrolled pain)"."""
    found: list[tuple[str, list[Fact]]] = []
    named: set[str] = set()
    for group, ingredients in table.extra["groups"].items():
        drugs = [f for f in having(held, ingredients) if f.id not in named]
        named |= {f.id for f in drugs}
        if drugs:
            found.append((group, drugs))
    if not found:
        return []
    said = "; ".join(
        f"{drug_names(drugs)} ({'each ' if len(drugs) > 1 else ''}{group})"
        for group, drugs in found
    )
    reason = (
        f"Home drugs that harm when stopped abruptly, with no discharge order: {said}: continue "
        "each, or plan how it stops"
    )
    return [risk_flag("abrupt-stop", reason, [f for _, drugs in found for f in drugs])]
