"""The procedures a stay's drugs and conditions call for, from the shipped ``indicated_therapy``
table (its header names the guidelines); one Needs review line per finding, never a decision:

- **Required procedures**: a drug whose indication is a procedure (prasugrel: PCI) with no such
  procedure in the episode.
- **Expected procedures**: a condition of the episode whose treatment is a procedure (an acute
  myocardial infarction: angiography, PCI, bypass or fibrinolysis) with none recorded: how it
  was treated is asked, since the drugs at discharge depend on it. A result answers a rule as
  a procedure does (an infarction's troponin); a lifelong condition counts on the problem list
  too, and a result of the months before admission answers it (a diabetes's HbA1c of the three
  months before); where the drugs of the plan that result sets are absent too (no
  glucose-lowering drug going home or at home), the line says so and asks for the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pipeline.clinical.indications import indication, indication_terms
from pipeline.clinical.risk_flags import (
    drug_names,
    having,
    held_at_home,
    results_since,
    risk_flag,
    stay_results,
)
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    DeviceAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)
from pipeline.text.rendering import plain_term


def required_procedures(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """A drug whose indication is a procedure (prasugrel: an acute coronary syndrome managed
    with PCI) going home with no such procedure in the episode: the record may lack the
    procedure, or the drug may be the wrong one; either way the physician says which. An old
    order to confirm is left out: its procedure, if any, came long before this episode."""
    to_confirm = set(state.medications.unconfirmed())
    started = [f for f in going_home if f.id not in to_confirm]
    flags = []
    for rule in therapy.extra.get("requires_procedure", []):
        given = having(started, [rule["ingredient"]])
        if given and not indication(state, rule):
            reason = (
                f"{drug_names(given)} at discharge with no {rule['procedure']} recorded in this "
                f"episode: {rule['why']}"
            )
            flags.append(risk_flag(f"procedure-{rule['ingredient']}", reason, given))
    return flags


def expected_procedures(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """A condition of the episode treated by a procedure, with no such procedure recorded in the
    episode: the record lacks the treatment, or the treatment was medical; the physician says
    which (a STEMI discharged on prasugrel with nothing of its reperfusion on record). A rule's
    ``treatment_codes`` let a result of the episode answer it too (an infarction's troponin).
    A rule's ``plan_drugs`` are the drugs the plan that the result sets would name: with none
    going home or at home either, the line says so, and asks for the plan as well (a diabetes
    with neither an HbA1c nor a glucose-lowering drug: whether it is diet alone or untreated
    is for the physician to say)."""
    procedures = [attributes_as(f, ProcedureAttributes).name for f in state.facts["procedure"]]
    flags = []
    for rule in therapy.extra.get("expected_procedures", []):
        indications = [
            (f, term)
            for f, term in indication_terms(state, rule.get("problem_list", False))
            if f.category != "procedure" and names_it(term, rule)
        ]
        treated = {"keywords": rule["treatment_keywords"]}
        done = any(names_it(name, treated) for name in procedures)
        if indications and not done and not _answering_results(state, rule):
            devices = _study_devices(state, rule.get("study_devices"))
            missing = (
                f"the equipment of a {rule['treatment']} recorded {_equipment(devices)} but no "
                "study or result in the record"
                if devices
                else f"no {rule['treatment']} recorded in {_when_recorded(rule)}"
            )
            missing, why = _without_plan_drugs(state, going_home, rule, missing)
            # The most general of the condition's terms names it ("Diabetes mellitus type 2",
            # not each of its complications); all of them are cited.
            named = min((plain_term(term) for _, term in indications), key=len)
            reason = f"{rule['condition']} ({named}) with {missing}: {why}"
            cited = [*(fact for fact, _ in indications), *devices]
            flags.append(risk_flag(f"treated-{rule['condition']}", reason, cited))
    return flags


def _without_plan_drugs(
    state: EvidenceState, going_home: Sequence[Fact], rule: dict[str, Any], missing: str
) -> tuple[str, str]:
    """What the line finds missing and what it asks: with the rule's ``plan_drugs`` neither going
    home nor at home, their absence too, and the plan's question in place of the result's."""
    plan = rule.get("plan_drugs")
    if plan is None:
        return missing, str(rule["why"])
    ingredients = plan["ingredients"]
    if having(going_home, ingredients) or held_at_home(state, ingredients):
        return missing, str(rule["why"])
    return f"{missing}, and no {plan['name']} going home or at home", str(plan["why"])


def _answering_results(state: EvidenceState, rule: dict[str, Any]) -> list[Fact]:
    """The results that answer a rule: the episode's, and with ``treatment_within`` those of as
    many days before admission too (an HbA1c of the three months before)."""
    codes = rule.get("treatment_codes", [])
    within = rule.get("treatment_within")
    return results_since(state, codes, within["days"]) if within else stay_results(state, codes)


def _when_recorded(rule: dict[str, Any]) -> str:
    """Where the line says nothing was found; the window in words, which the checker does not
    read as a figure the evidence must hold."""
    within = rule.get("treatment_within")
    return f"this episode or {within['said']}" if within else "this episode"


def _study_devices(state: EvidenceState, study: dict[str, Any] | None) -> list[Fact]:
    """The equipment of the study a rule asks for, recorded in the days before admission (a
    polysomnography analyzer three weeks before a sleep-apnoea stay): the study was done, its
    result is what the record lacks; a reader read the line without it as saying no study was
    done."""
    stay = state.stay()
    if study is None or stay is None or stay.start is None:
        return []
    since = aware(stay.start) - timedelta(days=study["within_days"])
    return [
        f
        for f in state.facts["device"]
        if (device := attributes_as(f, DeviceAttributes)).when is not None
        and since <= aware(device.when) <= aware(stay.start)
        and names_it(device.name, study)
    ]


def _equipment(devices: list[Fact]) -> str:
    """The study's equipment as the line names it: the day it was recorded, and its names."""
    named = "; ".join(plain_term(attributes_as(f, DeviceAttributes).name) for f in devices)
    days = sorted(
        {aware(w).date() for f in devices if (w := attributes_as(f, DeviceAttributes).when)}
    )
    return f"on {', '.join(str(day) for day in days)} ({named})"
