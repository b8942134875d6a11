"""Therapy an admission rules out: a drug of an avoided group going home, or at home, after an
admission for what rules it out (an opioid or benzodiazepine after a substance-use admission; a
hormonal contraceptive after a tubal ligation), from the shipped ``indicated_therapy`` table's
``avoid`` rules. A home drug with no discharge order (held or stopped?) counts: the patient has
it at home, so it may still be taken; so does a device's drug in place, where the rule says
``in_place``; and so do the earlier visits of the care the admission ends (``visits``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pipeline.clinical.indications import indication, named_terms
from pipeline.clinical.risk_flags import drug_names, having, held_at_home, risk_flag
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    OrganHistoryAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)
from pipeline.text.rendering import plain_term


def _care_visits(state: EvidenceState, visits: dict[str, Any] | None) -> list[tuple[Fact, str]]:
    """The earlier visits whose reason names the care an admission ends (contraception care
    before a sterilization: a quarterly injection that no drug order records), the latest within
    the rule's days before the stay, each said with that visit's date and what it did."""
    stay = state.stay()
    if visits is None or stay is None or stay.start is None:
        return []
    since = aware(stay.start) - timedelta(days=visits["within_days"])
    found = []
    for fact in state.facts["organ_history"]:
        visit = attributes_as(fact, OrganHistoryAttributes)
        if visit.kind != "encounter_reason" or visit.when is None or aware(visit.when) < since:
            continue
        if names_it(visit.text, visits):
            # What the last visit did names the care ("an intramuscular injection"): two readers
            # read "Contraception care visits" alone as hiding a quarterly injection.
            did = "; ".join(plain_term(name).lower() for name in visit.done)
            last = f"the last on {visit.when.date()}" + (f": {did}" if did else "")
            found.append((fact, f"{plain_term(visit.text)} visits before the stay ({last})"))
    return found


def stopped_on_purpose(state: EvidenceState, therapy: CodeTable) -> set[str]:
    """The home drugs held or stopped that an admission rules out (an opioid after withdrawal
    management): their stop is the plan, which :func:`avoided_therapy` asks about, never a
    withdrawal to prevent (a reader read "continue each, or plan how it stops" of tramadol
    after a detoxification as advice to continue it)."""
    return {
        fact.id
        for rule in therapy.extra["avoid"].values()
        if indication(state, rule)
        for drugs in rule["groups"].values()
        for fact, _ in held_at_home(state, drugs)
    }


def avoided_therapy(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """A drug an admission rules out (an opioid after one for substance use, a contraceptive
    after a sterilization), going home or at home: its stop is proposed, for the physician to
    confirm, with what the rule's ``ask`` says to settle if it is needed after all (the
    indication, the supply and an overdose plan; the other reason a contraceptive is kept)."""
    flags = []
    for name, rule in therapy.extra["avoid"].items():
        indications = indication(state, rule)
        if not indications:
            continue
        # A home drug held or stopped is named as such below, never as going home too.
        at_home = set(state.medications.held_at_home())
        given = [
            f
            for drugs in rule["groups"].values()
            for f in having(going_home, drugs)
            if f.id not in at_home
        ]
        in_place = rule.get("in_place", False)
        held = [
            found
            for drugs in rule["groups"].values()
            for found in held_at_home(state, drugs, in_place)
        ]
        held += _care_visits(state, rule.get("visits"))
        if not (given or held):
            continue
        drugs = "; ".join(filter(None, [drug_names(given), "; ".join(text for _, text in held)]))
        groups = " or ".join(rule["groups"])
        article = "An" if groups[:1] in "aeiou" else "A"
        reason = (
            f"{article} {groups} after an admission for {name} ({named_terms(indications)}): "
            f"{drugs}: {rule['ask']}"
        )
        cited = [*(f for f, _ in indications), *given, *(f for f, _ in held)]
        flags.append(risk_flag(f"avoid-{name}", reason, cited, "stop_proposed"))
    return flags
