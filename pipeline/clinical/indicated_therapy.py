"""What the stay's conditions call for at discharge, and what they rule out.

From the shipped ``indicated_therapy`` table (its header names the guidelines), one Needs review
line per finding, never a decision:

- **Expected therapy missing**: an indication of the episode (a diagnosis listed as principal or
  of the episode, a procedure of the episode, a reason of the stay; for a transplant also a
  recipient's status on the problem list) whose drug groups have no member among the medications
  going home (secondary prevention after myocardial infarction, PCI or CABG; an antithrombotic
  after a valve replacement; a vitamin K antagonist for a mechanical heart valve, read from the
  problem list and the patient's devices too; immunosuppression after a solid-organ
  transplant; medication for opioid use disorder after a drug use admission whose opioid only
  the notes name: ``only_with``'s ``notes``).
- **Therapy to avoid**: a drug of an avoided group going home after an admission for what rules it
  out (an opioid or benzodiazepine after a substance-use admission; a hormonal contraceptive
  after a tubal ligation). A home drug with no discharge order (held or stopped?) counts: the
  patient has it at home, so it may still be taken; so does a device's drug in place, where the
  rule says ``in_place``.
- **Required and expected procedures**: a drug whose indication is a procedure, and a condition
  whose treatment is one, with none recorded (:mod:`pipeline.clinical.indicated_procedures`).
- **Age limits**: a drug the table limits by age (prasugrel from 75 years), in
  :mod:`pipeline.clinical.age_limits`.

Matching is by keyword in the clinical term, with the table's words that cancel a match
("History of", "Awaiting"), and by ingredient word in the drug's name, so every ingredient of a
combination counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pipeline.clinical.age_limits import age_limits
from pipeline.clinical.indicated_procedures import expected_procedures, required_procedures
from pipeline.clinical.indications import (
    indication,
    named_terms,
    with_companion,
)
from pipeline.clinical.risk_flags import drug_names, having, risk_flag
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


def expected_therapy(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """A group with no member going home is missing; a group whose only members are orders to
    confirm (last written long before the stay) is asked about too: the expected drug must be
    confirmed, not left to "whether still taken". A rule with ``only_with`` holds only beside
    one of those conditions on the problem list, which its line then names too; one with
    ``unless`` stands aside where another rule's indication holds (an infarction of the stay
    asks for the statin that chronic coronary disease on the list would)."""
    to_confirm = set(state.medications.unconfirmed())
    expected: dict[str, Any] = therapy.extra["expected"]
    flags = []
    for name, rule in expected.items():
        if any(indication(state, expected[other]) for other in rule.get("unless", [])):
            continue  # the acute event's rule asks for these drugs already
        indications = indication(state, rule)
        if indications and "only_with" in rule:
            indications = with_companion(state, indications, rule["only_with"])
        if not indications:
            continue
        named = named_terms(indications)
        cited = [fact for fact, _ in indications]
        groups = rule["groups"] | _in_stay_groups(state, rule)
        members = {group: having(going_home, drugs) for group, drugs in groups.items()}
        at_home = {
            group: found
            for group, drugs in members.items()
            if not drugs and (found := _held_at_home(state, groups[group]))
        }
        missing = [group for group, drugs in members.items() if not drugs and group not in at_home]
        if missing:
            *first, last = [f"no {group}" for group in missing]
            absent = f"{', '.join(first)} and {last}" if first else last
            related = _related(name, rule)
            reason = (
                f"{absent[:1].upper()}{absent[1:]} at discharge {related} ({named}): confirm "
                f"{'each' if first else 'it'} was considered, or why it is not given"
            )
            flags.append(risk_flag(f"expected-{name}", reason, cited, "expected_drug_missing"))
        if at_home:
            flags.append(_only_at_home((_related(name, rule), named), at_home, cited))
        confirm = {
            group: drugs
            for group, drugs in members.items()
            if drugs and {f.id for f in drugs} <= to_confirm
        }
        if confirm:
            flags.append(_only_to_confirm(state, (_related(name, rule), named), confirm, cited))
    return flags


def _related(name: str, rule: dict[str, Any]) -> str:
    """The indication as its line names it: "after" an event of the stay, or the rule's own
    relation ("with" a lifelong condition: a reader read "after a diagnosis of epilepsy" coded
    in infancy as a new diagnosis)."""
    return f"{rule.get('relation', 'after')} {name}"


def _in_stay_groups(state: EvidenceState, rule: dict[str, Any]) -> dict[str, list[str]]:
    """The groups a rule expects only when its indication is of this episode, not only on the
    problem list or a device: the months after a transplant call for infection prophylaxis
    that a recipient of twenty years no longer takes."""
    in_stay: dict[str, list[str]] = rule.get("in_stay_groups", {})
    if in_stay and indication(state, rule | {"problem_list": False, "devices": False}):
        return in_stay
    return {}


def _only_members(groups: Sequence[str], several: bool) -> tuple[str, str]:
    """What an "only …" line names (the groups, or "<group> drugs" for several of one) and what
    it asks: several drugs of one group (aspirin, prasugrel and clopidogrel; two statins) are
    alternatives, not each to continue, so which one continues is the question."""
    *first, last = groups
    if first:
        return f"{', '.join(first)} and {last}", "that each continues, or why not"
    if several:
        return f"{last} drugs", "which continues, or why none does"
    return last, "that it continues, or why not"


def _only_to_confirm(
    state: EvidenceState, rule: tuple[str, str], groups: dict[str, list[Fact]], cited: list[Fact]
) -> ReviewFlag:
    """One line for the expected groups of one indication whose only members going home are
    orders to confirm (one cause, one line): "old" where each was last written long before the
    stay, not of an order that the stay's home list leaves out (written weeks before)."""
    name, named = rule
    drugs = [f for members in groups.values() for f in members]
    old = {c.admission for c in state.medications.changes if c.kind == "unconfirmed"}
    orders = "old order" if {f.id for f in drugs} <= old else "order"
    what, ask = _only_members(list(groups), len(drugs) > 1)
    said = f"are {orders}s" if len(drugs) > 1 else f"is an {orders}"
    reason = (
        f"The only {what} {name} ({named}) {said} to confirm: {drug_names(drugs)}: confirm {ask}"
    )
    return risk_flag(f"confirm-{name}-{'-'.join(groups)}", reason, [*cited, *drugs])


def _only_at_home(
    rule: tuple[str, str], groups: dict[str, list[tuple[Fact, str]]], cited: list[Fact]
) -> ReviewFlag:
    """One line for the expected groups of one indication whose only members are home drugs
    with no discharge order: "No statin at discharge" beside the admission note's simvastatin
    read to a reader as contradicting the note; the drug is there, its continuation is not."""
    name, named = rule
    drugs = [found for members in groups.values() for found in members]
    what, ask = _only_members(list(groups), len(drugs) > 1)
    said = "are home drugs" if len(drugs) > 1 else "is a home drug"
    reason = (
        f"The only {what} {name} ({named}) {said} with no discharge order: "
        f"{'; '.join(drug for _, drug in drugs)}: confirm {ask}"
    )
    return risk_flag(f"home-{name}-{'-'.join(groups)}", reason, [*cited, *(f for f, _ in drugs)])


# How a home drug with no discharge order is named on a rule's line, by where it stands.
_AT_HOME = {
    "held_or_stopped": "at home, held or stopped?",
    "in_place": "in place from before the stay",
}


def _held_at_home(
    state: EvidenceState, drugs: Sequence[str], in_place: bool = False
) -> list[tuple[Fact, str]]:
    """Home drugs with no discharge order (held or stopped?; with ``in_place``, a device's drug
    in place too) that hold one of ``drugs`` as a word, each with the fact that names it (the
    statement or the note's line)."""
    wanted = set(drugs)
    kinds = set(_AT_HOME) if in_place else {"held_or_stopped"}
    found = []
    for change in state.medications.changes:
        cited = change.admission or change.noted
        words = set(re.findall(r"[a-z]+", change.name.lower()))
        if change.kind in kinds and cited and words & wanted:
            found.append((state.fact(cited), f"{change.name} ({_AT_HOME[change.kind]})"))
    return found


def _care_visits(state: EvidenceState, visits: dict[str, Any] | None) -> list[tuple[Fact, str]]:
    """The earlier visits whose reason names the care an admission ends (contraception care
    before a sterilization: a quarterly injection that no drug order records), the latest within
    the rule's days before the stay, each said with that visit's date."""
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
            said = (
                f"{plain_term(visit.text)} visits before the stay (the last on {visit.when.date()})"
            )
            found.append((fact, said))
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
        for fact, _ in _held_at_home(state, drugs)
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
            for found in _held_at_home(state, drugs, in_place)
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


def indicated_therapy_flags(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """Every rule's flags: what is ruled out first, then what is missing, then the procedure a
    drug needs and the one a condition needs, then age limits."""
    return [
        *avoided_therapy(state, going_home, therapy),
        *expected_therapy(state, going_home, therapy),
        *required_procedures(state, going_home, therapy),
        *expected_procedures(state, therapy),
        *age_limits(state, going_home, therapy),
    ]
