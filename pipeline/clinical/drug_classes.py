"""Medication safety: therapeutic duplication, drug-class allergies, the regimen's risks
(``pipeline.clinical.regimen_risks``), a note's medication list against the orders, and leaving
with no medication.

From the shipped ``drug_classes`` table (ingredient → class; which classes must not be given twice
at discharge, alone or with a partner such as an ACE inhibitor with an ARB; which allergy
substances stand for a whole class). Computed in code, flagged for the physician, never decided.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pipeline.clinical.abrupt_stop import abrupt_stop_flags
from pipeline.clinical.avoided_therapy import stopped_on_purpose
from pipeline.clinical.bleeding_risk import dual_antiplatelet_bleeding_risk
from pipeline.clinical.duplications import classes_of, duplication_flags
from pipeline.clinical.graft_drugs import kidney_graft_drugs
from pipeline.clinical.inappropriate_drugs import inappropriate_drug_flags
from pipeline.clinical.indicated_therapy import indicated_therapy_flags
from pipeline.clinical.kidney_function import kidney_function
from pipeline.clinical.note_medications import noted_drugs
from pipeline.clinical.opioid_dose import opioid_dose_flags
from pipeline.clinical.pain_plan import pain_plan_flags
from pipeline.clinical.regimen_risks import regimen_risk_flags
from pipeline.clinical.risk_flags import RAISED_BY
from pipeline.clinical.statin_intensity import stronger_statin_kept
from pipeline.clinical.statin_interactions import transplant_statin_flags
from pipeline.clinical.strengths import strength_discrepancy_flags
from pipeline.clinical.tables import CodeTable, table
from pipeline.evidence.model import (
    AllergyAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    NarrativeAttributes,
    ReviewFlag,
    attributes_as,
    stable_id,
)
from pipeline.settings import PipelineSettings


def _drug_name(fact: Fact) -> str:
    return attributes_as(fact, MedicationAttributes).name


def allergy_class_flags(
    state: EvidenceState, discharge: list[Fact], drug_table: CodeTable
) -> list[ReviewFlag]:
    """A discharge medication of a class the patient is allergic to (penicillin → amoxicillin)."""
    stands_for = drug_table.extra["allergy_classes"]
    flags = []
    for allergy in state.facts.get("allergy", []):
        attributes = allergy.attributes
        if not isinstance(attributes, AllergyAttributes) or attributes.no_known_allergies:
            continue
        words = re.findall(r"[a-z]+", attributes.substance.lower())
        allergic_to = {stands_for[word] for word in words if word in stands_for}
        allergic_to |= classes_of(attributes.substance, drug_table)
        for fact in discharge:
            medication = fact.attributes
            assert isinstance(medication, MedicationAttributes)
            shared = classes_of(medication.name, drug_table) & allergic_to
            if shared:
                flags.append(
                    ReviewFlag.on_facts(
                        ("allergy-class",),
                        "allergy_conflict",
                        f"{medication.name} at discharge, and an allergy to "
                        f"{attributes.substance} ({', '.join(sorted(shared))})",
                        RAISED_BY,
                        [allergy.id, fact.id],
                    )
                )
    return flags


def no_discharge_medication_flags(state: EvidenceState) -> list[ReviewFlag]:
    """A patient who took medications before the stay and leaves with none: say so. Orders
    too old to count as taken (unconfirmed: they have their own flag) are not counted."""
    unconfirmed = set(state.medications.unconfirmed())
    taken = [fact_id for fact_id in state.medications.admission if fact_id not in unconfirmed]
    if state.medications.discharge or not taken:
        return []
    return [
        ReviewFlag(
            id=stable_id("flag", "no-discharge-medications", state.encounter or ""),
            code="no_discharge_medications",
            # Named, not counted: every number a draft states must be one of its evidence's.
            reason="No discharge medication, though these were active at admission: "
            f"{'; '.join(_drug_name(state.fact(fact_id)) for fact_id in taken)}: confirm they "
            "were all stopped",
            raised_by=RAISED_BY,
            fact_ids=taken,
        )
    ]


def noted_at_home(state: EvidenceState) -> list[Fact]:
    """The home drugs that only a note's medication list names, with no discharge order ("held
    or stopped?"), as the medications the safety rules read: at home, so they may still be
    taken (four opioids on an H&P's list are four opioids). Each is cited by the note's line;
    none joins the evidence, whose medications are the EHR's."""
    found = []
    for change in state.medications.changes:
        if change.kind != "held_or_stopped" or change.admission or not change.noted:
            continue
        attributes = MedicationAttributes(
            name=change.name,
            status="active",
            phase="admission",
            phase_rule="named on the home medication list of a note of this stay",
            recorded_as="statement",
        )
        line = state.fact(change.noted)
        found.append(
            Fact(id=line.id, category="medication", attributes=attributes, sources=line.sources)
        )
    return found


def medication_safety(state: EvidenceState, settings: PipelineSettings) -> EvidenceState:
    """The reconciled state with its medication safety flags (once, however often it runs)."""
    drug_table = table("drug_classes", settings)
    # Orders to confirm may still be taken: a drug that clashes with one is flagged all the same.
    unconfirmed = frozenset(state.medications.unconfirmed())
    # A home drug with no discharge order ("held or stopped?") is at home and may still be taken:
    # an NSAID there beside an antiplatelet going home is the same bleeding risk.
    noted = noted_at_home(state)
    held = frozenset(state.medications.held_at_home()) | {f.id for f in noted}
    discharge_ids = set(state.medications.discharge) | unconfirmed | held
    ordered = [
        fact
        for fact in state.facts.get("medication", [])
        if fact.id in discharge_ids and isinstance(fact.attributes, MedicationAttributes)
    ]
    discharge = ordered + noted
    flags = [flag for flag in state.flags_for_review if flag.raised_by != RAISED_BY]
    flags += allergy_class_flags(state, discharge, drug_table)
    duplications = duplication_flags(discharge, drug_table, unconfirmed, held)
    statins = table("statin_intensity", settings)
    flags += stronger_statin_kept(state, duplications, discharge, unconfirmed | held, statins)
    risks = table("regimen_risks", settings)
    flags += regimen_risk_flags(state, discharge, risks)
    flags += kidney_graft_drugs(state, discharge, risks, table("transplant_organs", settings))
    flags += dual_antiplatelet_bleeding_risk(
        state, discharge, risks, table("bleeding_risk", settings), unconfirmed | held
    )
    # Indicated therapy reads the notes' home lists itself.
    therapy = table("indicated_therapy", settings)
    flags += indicated_therapy_flags(state, ordered, therapy)
    flags += transplant_statin_flags(
        state, discharge, therapy, table("statin_interactions", settings)
    )
    # A drug a note of the stay prescribes, given in the stay and not yet ordered, may go home.
    prescribed = {i for c in state.medications.changes for i in c.stay_orders}
    maybe_home = [
        *discharge,
        *(f for f in state.facts.get("medication", []) if f.id in prescribed - discharge_ids),
    ]
    flags += inappropriate_drug_flags(state, maybe_home, table("inappropriate_drugs", settings))
    opioid_flags, computed = opioid_dose_flags(state, discharge, table("opioid_mme", settings))
    flags += opioid_flags
    on_purpose = stopped_on_purpose(state, therapy)
    at_home = [f for f in discharge if f.id in held and f.id not in on_purpose]
    flags += abrupt_stop_flags(at_home, table("abrupt_stop", settings))
    flags += discrepancy_flags(state)
    flags += strength_discrepancy_flags(state)
    flags += no_discharge_medication_flags(state)
    flags += pain_plan_flags(state, flags, discharge, drug_table, table("pain_plan", settings))
    unsettled = unconfirmed | held
    flags = [_if_continued(flag, unsettled, discharge_ids) for flag in flags]
    # The eGFR computed from creatinine, where it is the one used: the renal line and the
    # problem list's kidney stage cite it.
    kidneys = kidney_function(state, risks)
    if kidneys is not None and kidneys.computed is not None:
        computed.append(kidneys.computed)
    # The rules' computed facts replace the last run's, as their flags do.
    facts = {**state.facts, "computed": computed}
    return state.model_copy(update={"flags_for_review": flags, "facts": facts})


def _if_continued(flag: ReviewFlag, unsettled: frozenset[str], medications: set[str]) -> ReviewFlag:
    """A flag whose drugs are all orders to confirm or home drugs held or stopped says "if
    continued", not "at discharge": the list asks whether they are still taken, and a Needs
    review line calling them discharge drugs contradicted it. A missing drug's line is about
    what discharge lacks: the alternative it names on the record changes nothing of that."""
    cited = [i for i in flag.fact_ids if i in medications or i in unsettled]
    if flag.raised_by != RAISED_BY or not cited or not set(cited) <= unsettled:
        return flag
    if flag.code == "expected_drug_missing":
        return flag
    return flag.model_copy(
        update={"reason": flag.reason.replace(" at discharge", " if continued", 1)}
    )


def discrepancy_flags(state: EvidenceState) -> list[ReviewFlag]:
    """A home medication list written in a note of the stay against the orders, by ingredient:
    an order active at admission that the list leaves out. (A drug the list names that no
    discharge order carries is a "held or stopped?" line of the reconciliation.)"""
    stale = {c.admission for c in state.medications.changes if c.kind == "unconfirmed"}
    orders = [
        fact
        for fact in state.facts.get("medication", [])
        if isinstance(fact.attributes, MedicationAttributes)
        and fact.attributes.recorded_as == "order"
        and fact.id in state.medications.admission
        and fact.id not in stale
    ]
    home = [
        fact
        for fact in state.facts.get("medication_list", [])
        if (attributes_as(fact, NarrativeAttributes).list_kind or "home") == "home"
    ]
    lists: dict[str, list[Fact]] = defaultdict(list)
    for fact in home:
        lists[fact.sources[0].document or ""].append(fact)
    titles = {document.id: document.title for document in state.documents}
    flags: list[ReviewFlag] = []
    for document_id, lines in lists.items():
        named = noted_drugs(lines, "home")
        left_out = [f for f in orders if not any(drug.matches(_drug_name(f)) for drug in named)]
        if not left_out:
            continue
        names = "; ".join(_drug_name(f) for f in left_out)
        title = titles.get(document_id) or "a note"
        reason = f"Medication list in {title}: it leaves out {names} (ordered before admission)"
        if any(flag.reason == reason for flag in flags):
            continue  # the same list in another note of the stay: said once
        flags.append(
            ReviewFlag(
                id=stable_id("flag", "med-list", document_id),
                code="medication_discrepancy",
                reason=reason,
                raised_by=RAISED_BY,
                fact_ids=[lines[0].id] + [f.id for f in left_out],
                document=document_id,
            )
        )
    return flags
