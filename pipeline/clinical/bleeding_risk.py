"""High bleeding risk on dual antiplatelet therapy, by the ARC-HBR criteria.

Two antiplatelets going home after a coronary event are the standard, for a time the physician
sets; in a patient at high bleeding risk that time is shortened or the combination de-escalated
(2023 ESC ACS guideline). ARC-HBR (the shipped ``bleeding_risk`` table names its source) calls a
patient at high bleeding risk with one major or two minor criteria. Each criterion is read from
the record: the problem list and the episode's diagnoses, the stay's latest haemoglobin,
platelets and eGFR, the patient's age, and long-term NSAIDs or steroids going home. One Needs
review line names the criteria met, with their values and dates, and a proton pump inhibitor
when none goes home (the same guideline: recommended with dual antiplatelet therapy at high
risk of gastrointestinal bleeding); never a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from pipeline.clinical.lab_risks import said_value
from pipeline.clinical.risk_flags import (
    drug_names,
    fact_of,
    having,
    latest_of,
    risk_flag,
    stay_results,
    words,
)
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    Fact,
    MedicationAttributes,
    ReviewFlag,
    attributes_as,
)
from pipeline.text.rendering import plain_term

# Where a criterion may be read: the problem list and what the stay itself found.
_LISTINGS = frozenset({"principal", "episode", "active"})


@dataclass
class _Criteria:
    """The criteria met so far, each said as the flag will say it, and the facts they cite."""

    major: list[str] = field(default_factory=list)
    minor: list[str] = field(default_factory=list)
    cited: list[Fact] = field(default_factory=list)
    # Anaemia on the problem list standing in for a haemoglobin the stay never measured: the
    # value could be a major criterion on its own, so the line asks for it.
    unmeasured_anaemia: str | None = None

    def add(self, major: bool, said: str, facts: Sequence[Fact]) -> None:
        (self.major if major else self.minor).append(said)
        self.cited += facts

    @property
    def high_risk(self) -> bool:
        return bool(self.major) or len(self.minor) >= 2


_COUNTED = {2: "two", 3: "three", 4: "four"}


def _antiplatelets(going_home: Sequence[Fact], risks: CodeTable) -> tuple[list[Fact], int]:
    """The antiplatelets going home and how many different ingredients they hold, when two or
    more (aspirin, clopidogrel and prasugrel are three: the line counts them, never "two")."""
    listed = risks.extra["antithrombotic"]["antiplatelet"]
    drugs = having(going_home, listed)
    ingredients = {w for f in drugs for w in words(attributes_as(f, MedicationAttributes).name)}
    count = len(ingredients & set(listed))
    return (drugs, count) if count >= 2 else ([], 0)


def _diagnoses(state: EvidenceState) -> list[tuple[Fact, DiagnosisAttributes]]:
    return [
        (f, f.attributes)
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes) and f.attributes.listing in _LISTINGS
    ]


def _since(diagnosis: DiagnosisAttributes) -> str:
    return f" (since {diagnosis.onset.date().isoformat()})" if diagnosis.onset else ""


def _recent(diagnosis: DiagnosisAttributes, admitted: datetime | None, days: int | None) -> bool:
    """Whether a condition began within ``days`` before admission (always, with no limit)."""
    if days is None:
        return True
    onset = diagnosis.onset
    return onset is not None and admitted is not None and admitted - onset <= timedelta(days=days)


def _conditions(state: EvidenceState, hbr: CodeTable, criteria: _Criteria) -> None:
    diagnoses = _diagnoses(state)
    stay = state.stay()
    admitted = stay.start if stay else None
    for major, key in ((True, "major_conditions"), (False, "minor_conditions")):
        for name, rule in hbr.extra[key].items():
            found = [
                (f, d)
                for f, d in diagnoses
                if names_it(d.display, rule) and _recent(d, admitted, rule.get("within_days"))
            ]
            if found:
                fact, diagnosis = found[0]
                said = f"{name}: {plain_term(diagnosis.display)}{_since(diagnosis)}"
                criteria.add(major, said, [fact])


def _latest(state: EvidenceState, codes: Sequence[str]) -> tuple[Fact, Decimal, str] | None:
    results = stay_results(state, codes)
    latest = latest_of(results)
    if latest is None or latest.value is None:
        return None
    return fact_of(results, latest), latest.value, said_value(latest, latest.name)


def _haemoglobin(state: EvidenceState, hbr: CodeTable, criteria: _Criteria) -> None:
    found = _latest(state, hbr.extra["hemoglobin_codes"])
    if found is None:
        anaemia = _standing_in(state, hbr.extra["anaemia_keywords"], "haemoglobin")
        if anaemia is not None:
            criteria.add(False, anaemia[1], [anaemia[0]])
            criteria.unmeasured_anaemia = anaemia[1]
        return
    fact, value, said = found
    minor_below = hbr.extra["hemoglobin_minor_below"].get(state.patient_gender() or "", 13)
    if value < hbr.extra["hemoglobin_major_below"]:
        criteria.add(True, said, [fact])
    elif value < minor_below:
        criteria.add(False, said, [fact])


def _laboratory(
    state: EvidenceState, hbr: CodeTable, risks: CodeTable, criteria: _Criteria
) -> None:
    _haemoglobin(state, hbr, criteria)
    platelets = _latest(state, hbr.extra["platelet_codes"])
    if platelets is not None and platelets[1] < hbr.extra["platelets_major_below"]:
        criteria.add(True, platelets[2], [platelets[0]])
    egfr = _latest(state, risks.extra["egfr_codes"])
    if egfr is None:
        _kidney_disease(state, hbr, criteria)
    elif egfr[1] < hbr.extra["egfr_minor_below"]:
        criteria.add(egfr[1] < hbr.extra["egfr_major_below"], egfr[2], [egfr[0]])


def _kidney_disease(state: EvidenceState, hbr: CodeTable, criteria: _Criteria) -> None:
    """With no eGFR measured, chronic kidney disease on the problem list stands for the eGFR
    criterion by its stage (stage 4 or worse: eGFR below 30)."""
    for major, key in ((True, "kidney_major"), (False, "kidney_minor")):
        found = _standing_in(state, hbr.extra[key], "eGFR")
        if found is not None:
            criteria.add(major, found[1], [found[0]])
            return


def _standing_in(
    state: EvidenceState, keywords: Sequence[str], unmeasured: str
) -> tuple[Fact, str] | None:
    """The first problem naming one of ``keywords``, said as standing in for a value the stay
    did not measure ("Anemia on the problem list (since …), no haemoglobin in this stay")."""
    for fact, diagnosis in _diagnoses(state):
        if any(word in diagnosis.display.lower() for word in keywords):
            said = f"{plain_term(diagnosis.display)} on the problem list{_since(diagnosis)}"
            return fact, f"{said}, no {unmeasured} in this stay"
    return None


def _counted(count: int) -> str:
    return _COUNTED.get(count, str(count))


def _on_antiplatelets(
    antiplatelets: Sequence[Fact], count: int, unsettled: frozenset[str], risks: CodeTable
) -> str:
    """The antiplatelets as the line counts them: those going home, and apart from them an old
    order to confirm or a home drug held or stopped, said conditionally (a reader read "three
    antiplatelets at discharge" beside the list's proposed stop of one of them as a
    contradiction). All of them unsettled, the line says "at discharge" and is read "if
    continued" with the other regimen flags."""
    settled = [f for f in antiplatelets if f.id not in unsettled]
    pending = [f for f in antiplatelets if f.id in unsettled]
    if not settled or not pending:
        return f"{_counted(count)} antiplatelets at discharge, {drug_names(antiplatelets)}"
    continues = "continue" if len(pending) > 1 else "continues"
    going = _antiplatelets(settled, risks)[1]
    if going >= 2:
        return (
            f"{_counted(going)} antiplatelets at discharge, {drug_names(settled)}, "
            f"{_counted(count)} if {drug_names(pending)}, to confirm, {continues}"
        )
    return (
        f"{_counted(count)} antiplatelets if {drug_names(pending)}, to confirm, {continues}, "
        f"with {drug_names(settled)} at discharge"
    )


def dual_antiplatelet_bleeding_risk(
    state: EvidenceState,
    going_home: Sequence[Fact],
    risks: CodeTable,
    hbr: CodeTable,
    unsettled: frozenset[str] = frozenset(),
) -> list[ReviewFlag]:
    """ARC-HBR's criteria read beside two antiplatelets or more on the list (``unsettled``: the
    orders to confirm and home drugs held or stopped among them, said conditionally)."""
    antiplatelets, count = _antiplatelets(going_home, risks)
    if not antiplatelets:
        return []
    on = _on_antiplatelets(antiplatelets, count, unsettled, risks)
    criteria = _Criteria()
    _conditions(state, hbr, criteria)
    _laboratory(state, hbr, risks, criteria)
    aged = state.patient_age()
    if aged is not None and aged[1] >= hbr.extra["age_minor_from"]:
        patient, age = aged
        criteria.add(False, f"age {age}", [patient])
    long_term = [
        f for f in having(going_home, hbr.extra["long_term_minor"]) if f not in antiplatelets
    ]
    if long_term:
        criteria.add(False, f"{drug_names(long_term)} (long-term NSAID or steroid)", long_term)
    if not criteria.high_risk:
        return _haemoglobin_asked(criteria, antiplatelets, on)
    said = "; ".join(
        [*(f"major: {c}" for c in criteria.major), *(f"minor: {c}" for c in criteria.minor)]
    )
    reason = (
        f"High bleeding risk (ARC-HBR) on {on}: {said}: confirm the combination and set its "
        "duration"
    )
    if criteria.unmeasured_anaemia:
        reason += f"; measure the haemoglobin: {_BELOW_ELEVEN}"
    if not having(going_home, risks.extra["gastroprotection"]):
        reason += (
            "; no proton pump inhibitor going home, which protects the stomach on dual "
            "antiplatelet therapy at high bleeding risk: add one, or say why not"
        )
    return [risk_flag("high-bleeding-risk", reason, [*criteria.cited, *antiplatelets])]


# The threshold in words: the checker reads figures against the evidence, and this one is the
# criterion's, not the record's.
_BELOW_ELEVEN = (
    "below eleven g/dL it is a major criterion of high bleeding risk on its own (ARC-HBR)"
)


def _haemoglobin_asked(
    criteria: _Criteria, antiplatelets: Sequence[Fact], on: str
) -> list[ReviewFlag]:
    """Below the criteria's count, anaemia on the problem list with no haemoglobin measured:
    the value the stay never took could make the risk high by itself (ARC-HBR's major
    haemoglobin criterion), so the line asks for it; two readers of infarction stays on two
    antiplatelets with anaemia on the list asked for the haemoglobin the draft never named."""
    if criteria.unmeasured_anaemia is None:
        return []
    reason = (
        f"{on[0].upper()}{on[1:]}, with {criteria.unmeasured_anaemia}: measure the "
        f"haemoglobin before the combination and its duration are set: {_BELOW_ELEVEN}"
    )
    return [risk_flag("high-bleeding-risk", reason, [*criteria.cited, *antiplatelets])]
