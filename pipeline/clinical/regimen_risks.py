"""Risks of the discharge regimen a reviewing physician checks before signing.

Each rule is one Needs review line over the medications that go home (and the orders to confirm,
which may still be taken), from the shipped ``regimen_risks`` table (its header names the
guidelines): an anticoagulant with an antiplatelet or NSAID; an NSAID with an antiplatelet and no
gastric protection; warfarin with no recent INR (and
what sets its goal, when the record names it); an antithrombotic for a patient of the table's
age admitted after a fall; an opioid with a benzodiazepine; an opioid prescribed with no
duration; a cardiovascular drug taken "as needed"; and
drugs a laboratory value decides (``lab_risks``: the dose at a low eGFR, potassium-raising drugs
at a high potassium, drugs that lower blood pressure at a low systolic pressure, insulin or a
secretagogue at a low HbA1c or glucose). Computed in code,
flagged, never decided. No flag states a number the evidence does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta

from pipeline.clinical.lab_risks import (
    hypoglycaemia_risk,
    low_blood_pressure,
    potassium_monitoring,
    potassium_raising,
    renal_dosing,
)
from pipeline.clinical.risk_flags import drug_names, having, risk_flag, stay_results
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    MedicationAttributes,
    ProcedureAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)


def _bleeding_flag(key: str, drugs: list[Fact], combination: str, ask: str) -> list[ReviewFlag]:
    """One flag over the drugs that bleed together, in the words both bleeding rules share."""
    reason = f"Bleeding risk at discharge, {combination}: {drug_names(drugs)}: {ask}"
    return [risk_flag(key, reason, drugs)]


def bleeding(going_home: Sequence[Fact], risks: CodeTable) -> list[ReviewFlag]:
    classes = risks.extra["antithrombotic"]
    anticoagulants = having(going_home, classes["anticoagulant"])
    partners = having(going_home, [*classes["antiplatelet"], *classes["nsaid"]])
    partners = [f for f in partners if f not in anticoagulants]
    if not (anticoagulants and partners):
        return []
    combination = "an anticoagulant with an antiplatelet or NSAID"
    ask = "confirm the combination is intended, and for how long"
    return _bleeding_flag("bleeding", [*anticoagulants, *partners], combination, ask)


def nsaid_with_antiplatelet(going_home: Sequence[Fact], risks: CodeTable) -> list[ReviewFlag]:
    """STOPP C11. With an anticoagulant as well, the bleeding rule above says it already."""
    classes = risks.extra["antithrombotic"]
    if having(going_home, classes["anticoagulant"]):
        return []
    nsaids = having(going_home, classes["nsaid"])
    antiplatelets = [f for f in having(going_home, classes["antiplatelet"]) if f not in nsaids]
    if not (nsaids and antiplatelets) or having(going_home, risks.extra["gastroprotection"]):
        return []
    combination = "an NSAID with an antiplatelet and no proton pump inhibitor"
    ask = "confirm the NSAID is needed, and protect the stomach if it is"
    return _bleeding_flag("nsaid-antiplatelet", [*nsaids, *antiplatelets], combination, ask)


def _indications(state: EvidenceState, keywords: Sequence[str]) -> list[tuple[Fact, str]]:
    """Diagnoses and procedures of the record that name one of ``keywords``, with the name."""
    found = []
    for fact in [*state.facts["diagnosis"], *state.facts["procedure"]]:
        attributes = fact.attributes
        if isinstance(attributes, DiagnosisAttributes):
            text = attributes.display
        elif isinstance(attributes, ProcedureAttributes):
            text = attributes.name
        else:
            continue
        if any(keyword in text.lower() for keyword in keywords):
            found.append((fact, text))
    return found


def warfarin_monitoring(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    antagonists = having(going_home, risks.extra["vitamin_k_antagonist"])
    if not antagonists:
        return []
    stay = state.stay()
    window = timedelta(days=risks.extra["inr_within_days"])
    end = stay.end if stay is not None else None
    recent = [
        f
        for f in stay_results(state, risks.extra["inr_codes"])
        if end is None
        or aware(end) - aware(attributes_as(f, LabResultAttributes).effective or end) <= window
    ]
    if recent:
        return []
    indications = _indications(state, risks.extra["inr_goal_keywords"])
    goal = ""
    if indications:
        named = "; ".join(dict.fromkeys(text for _, text in indications))
        goal = f" (the record names what sets its goal: {named})"
    reason = (
        f"{drug_names(antagonists)} at discharge with no recent INR in the stay: check the INR and "
        f"state the INR goal{goal}"
    )
    return [risk_flag("inr", reason, [*antagonists, *(fact for fact, _ in indications)])]


def _falls(state: EvidenceState, keywords: Sequence[str]) -> list[Fact]:
    """The stay's reason, complaint or episode diagnoses when they name a fall."""
    pattern = re.compile("|".join(rf"\b{re.escape(k)}s?\b" for k in keywords), re.IGNORECASE)
    found = []
    for fact in state.facts["encounter"]:
        attributes = attributes_as(fact, EncounterAttributes)
        said = " ".join([*attributes.reasons, attributes.text or ""])
        if pattern.search(said):
            found.append(fact)
    for fact in state.facts["diagnosis"]:
        diagnosis = attributes_as(fact, DiagnosisAttributes)
        if diagnosis.listing in {"principal", "episode"} and pattern.search(diagnosis.display):
            found.append(fact)
    return found


def falls_in_old_age(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    classes = risks.extra["antithrombotic"]
    antithrombotics = having(going_home, [*classes["anticoagulant"], *classes["antiplatelet"]])
    aged = state.patient_age()
    if not antithrombotics or aged is None or aged[1] < risks.extra["fall_age"]:
        return []
    patient, age = aged
    falls = _falls(state, risks.extra["fall_keywords"])
    if not falls:
        return []
    reason = (
        f"{drug_names(antithrombotics)} at discharge for a {age}-year-old admitted after a fall: "
        "weigh the bleeding risk"
    )
    return [risk_flag("fall", reason, [patient, *falls, *antithrombotics])]


def opioid_duration(going_home: Sequence[Fact], risks: CodeTable) -> list[ReviewFlag]:
    # A prescription's duration: a home drug the patient says they take has none to state.
    undated = [
        f
        for f in having(going_home, risks.extra["opioid"])
        if not attributes_as(f, MedicationAttributes).duration
        and attributes_as(f, MedicationAttributes).recorded_as == "order"
    ]
    if not undated:
        return []
    reason = (
        f"{drug_names(undated)} at discharge with no duration: state how long it is to be taken"
    )
    return [risk_flag("opioid", reason, undated)]


def opioid_with_benzodiazepine(going_home: Sequence[Fact], risks: CodeTable) -> list[ReviewFlag]:
    """CDC 2022 (recommendation 11) and the FDA's boxed warning: an opioid with a benzodiazepine
    risks respiratory depression. (Several opioids at once are the duplication rule's line.)"""
    opioids = having(going_home, risks.extra["opioid"])
    sedatives = having(going_home, risks.extra["benzodiazepine"])
    if not (opioids and sedatives):
        return []
    both = [*opioids, *sedatives]
    reason = (
        f"An opioid with a benzodiazepine: {drug_names(both)}: a risk of respiratory "
        "depression; confirm both are needed"
    )
    return [risk_flag("opioid-benzodiazepine", reason, both)]


def cardiovascular_drugs_as_needed(
    going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """One flag per drug, so that each doubt can sit on that drug's own line, whose schedule then
    reads as a question, never as the instruction "as needed"."""
    as_needed = [
        f
        for f in having(going_home, risks.extra["chronic_cardiac"])
        if attributes_as(f, MedicationAttributes).as_needed
    ]
    return [
        risk_flag(
            "as-needed",
            f"{drug_names([fact])} at discharge as needed, though a cardiovascular drug is "
            "taken on a schedule: confirm the instruction",
            [fact],
            code="schedule_in_doubt",
        )
        for fact in as_needed
    ]


def regimen_risk_flags(
    state: EvidenceState, going_home: Sequence[Fact], risks: CodeTable
) -> list[ReviewFlag]:
    """Every rule's flags, most dangerous first."""
    return [
        *bleeding(going_home, risks),
        *nsaid_with_antiplatelet(going_home, risks),
        *warfarin_monitoring(state, going_home, risks),
        *falls_in_old_age(state, going_home, risks),
        *renal_dosing(state, going_home, risks),
        *potassium_raising(state, going_home, risks),
        *potassium_monitoring(state, going_home, risks),
        *low_blood_pressure(state, going_home, risks),
        *hypoglycaemia_risk(state, going_home, risks),
        *opioid_with_benzodiazepine(going_home, risks),
        *opioid_duration(going_home, risks),
        *cardiovascular_drugs_as_needed(going_home, risks),
    ]
