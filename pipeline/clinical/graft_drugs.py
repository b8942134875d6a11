"""Drugs whose safety a new kidney graft's function decides, going home from the stay that
transplanted it with no renal function or no electrolytes measured in it.

A kidney transplanted in this stay changes the renal function every dose was set for: KDIGO's
transplant guideline measures creatinine daily until discharge (recommendation 13.1.1), and the
drugs that raise potassium or that kidney function rules out or doses (``regimen_risks``:
potassium_raising, renal_avoid, renal_reduce) are checked against it, as
``lab_risks.potassium_monitoring`` checks a drug started in the stay. The graft is read as the
draft reads it: a procedure of the stay, or a "History of renal transplant" recorded during it
(``transplant_organs`` names the organ). Flagged, never decided: the flag names the drugs and
what the stay did not measure.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.clinical.lab_risks import renal_lists
from pipeline.clinical.risk_flags import (
    drug_names,
    during_stay,
    having,
    risk_flag,
    stay_results,
)
from pipeline.clinical.tables import CodeTable
from pipeline.clinical.transplant import organs_named
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    ReviewFlag,
    attributes_as,
)
from pipeline.text.rendering import plain_term

# The organ whose graft the renal rules read.
_KIDNEY = "kidney"


def kidney_graft_drugs(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable, organs: CodeTable
) -> list[ReviewFlag]:
    """One flag over the drugs going home that the kidney's function decides, when this stay
    transplanted a kidney and measured no renal function or no electrolytes."""
    grafts = _kidney_grafts(state, organs)
    if not grafts:
        return []
    avoid, reduce = renal_lists(risks)
    drugs = having(going_home, [*risks.extra["potassium_raising"], *avoid, *reduce])
    if not drugs:
        return []
    renal = [*risks.extra["creatinine_codes"], *risks.extra["egfr_codes"]]
    measured = {
        "renal function": stay_results(state, renal),
        "electrolytes": stay_results(state, risks.extra["potassium_codes"]),
    }
    missing = [name for name, results in measured.items() if not results]
    if not missing:
        return []
    graft, what = grafts[0]
    reason = (
        f"{drug_names(drugs)} at discharge after a kidney transplant in this stay "
        f"({plain_term(what)}), with no {' and no '.join(missing)} measured since: the graft's "
        "function decides these drugs' doses and safety; check renal function and electrolytes "
        "before they go home"
    )
    return [risk_flag("kidney-graft", reason, [graft, *drugs])]


def _kidney_grafts(state: EvidenceState, organs: CodeTable) -> list[tuple[Fact, str]]:
    """The procedures of the stay, and the diagnoses recorded during it, that name a kidney
    transplant, each with its term."""
    found = []
    for f in state.facts["procedure"]:
        procedure = attributes_as(f, ProcedureAttributes)
        if during_stay(state, procedure.performed_start) and _names_kidney(procedure.name, organs):
            found.append((f, procedure.name))
    for f in state.facts["diagnosis"]:
        diagnosis = attributes_as(f, DiagnosisAttributes)
        if during_stay(state, diagnosis.onset) and _names_kidney(diagnosis.display, organs):
            found.append((f, diagnosis.display))
    return found


def _names_kidney(term: str, organs: CodeTable) -> bool:
    return organs_named([term], organs) == [_KIDNEY]
