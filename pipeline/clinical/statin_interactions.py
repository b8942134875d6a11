"""A transplant recipient's statin, read beside the immunosuppression it is chosen with.

Cyclosporine raises every statin's exposure, several times over for most (it inhibits CYP3A4
and OATP1B1): simvastatin and pitavastatin are contraindicated with it, lovastatin and
atorvastatin to be avoided, rosuvastatin, pravastatin and fluvastatin limited to low doses (their
labels; the shipped ``statin_interactions`` table names its sources). After a solid-organ
transplant, a statin on the list is one Needs review line when cyclosporine goes home with it,
or when no immunosuppressant is on the list at all: the regimen the statin must be chosen with
is not on the record yet. Four readers of three kidney-transplant stays named simvastatin going
home with no word on the immunosuppression to come. Flagged, never decided.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.indications import indication, named_terms
from pipeline.clinical.risk_flags import drug_names, having, risk_flag, words
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
)


def transplant_statin_flags(
    state: EvidenceState, drugs: Sequence[Fact], therapy: CodeTable, interactions: CodeTable
) -> list[ReviewFlag]:
    """One line over the statins on the list after a transplant, with cyclosporine going home
    or with no immunosuppressant on the list."""
    name = interactions.extra["recipients"]
    rule = therapy.extra["expected"].get(name)
    if rule is None or "immunosuppressant" not in rule.get("groups", {}):
        # A deployment's tables that disagree are a configuration error, named as such.
        raise ValueError(
            f"statin_interactions: its recipients rule {name!r} is no rule of the "
            "indicated_therapy table with an immunosuppressant group"
        )
    labels: dict[str, str] = interactions.extra["statins"]
    statins = having(drugs, list(labels))
    recipients = indication(state, rule) if statins else []
    if not recipients:
        return []
    cyclosporine = having(drugs, interactions.extra["interacting"])
    regimen = having(drugs, rule["groups"]["immunosuppressant"])
    if regimen and not cyclosporine:
        return []
    said = " and ".join(_label(statin, labels) for statin in statins)
    if cyclosporine:
        reason = (
            f"{drug_names(statins)} with {drug_names(cyclosporine)} after {name} "
            f"({named_terms(recipients)}): with cyclosporine, {said} (myopathy, "
            "rhabdomyolysis): change the statin or its dose, or say why not"
        )
    else:
        reason = (
            f"{drug_names(statins)} after {name} ({named_terms(recipients)}) with no "
            f"immunosuppressant on the list: should it include cyclosporine, {said} "
            "(myopathy, rhabdomyolysis): choose the statin with the immunosuppression"
        )
    cited = [*(f for f, _ in recipients), *statins, *cyclosporine]
    return [risk_flag("transplant-statin", reason, cited)]


def _label(statin: Fact, labels: dict[str, str]) -> str:
    """What the label says of a statin with cyclosporine ("simvastatin is contraindicated")."""
    held = words(attributes_as(statin, MedicationAttributes).name)
    ingredient = next(name for name in labels if name in held)
    return f"{ingredient} is {labels[ingredient]}"
