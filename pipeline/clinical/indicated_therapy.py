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
  out (:mod:`pipeline.clinical.avoided_therapy`).
- **Required and expected procedures**: a drug whose indication is a procedure, and a condition
  whose treatment is one, with none recorded (:mod:`pipeline.clinical.indicated_procedures`).
- **Age limits**: a drug the table limits by age (prasugrel from 75 years), in
  :mod:`pipeline.clinical.age_limits`.

Matching is by keyword in the clinical term, with the table's words that cancel a match
("History of", "Awaiting"), and by ingredient word in the drug's name, so every ingredient of a
combination counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.clinical.age_limits import age_limits
from pipeline.clinical.avoided_therapy import avoided_therapy
from pipeline.clinical.indicated_procedures import expected_procedures, required_procedures
from pipeline.clinical.indications import (
    indication,
    named_terms,
    with_companion,
)
from pipeline.clinical.risk_flags import drug_names, having, held_at_home, risk_flag
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    AllergyAttributes,
    EvidenceState,
    Fact,
    ReviewFlag,
    attributes_as,
)


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
            if not drugs and (found := held_at_home(state, groups[group]))
        }
        missing = [group for group, drugs in members.items() if not drugs and group not in at_home]
        if missing:
            *first, last = [f"no {group}" for group in missing]
            absent = f"{', '.join(first)} and {last}" if first else last
            related = _related(name, rule)
            instead, standing_in = _alternatives(state, going_home, rule, missing)
            reason = (
                f"{absent[:1].upper()}{absent[1:]} at discharge {related} ({named}): confirm "
                f"{'each' if first else 'it'} was considered, or why it is not given{instead}"
            )
            flags.append(
                risk_flag(
                    f"expected-{name}", reason, [*cited, *standing_in], "expected_drug_missing"
                )
            )
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


def _alternatives(
    state: EvidenceState, going_home: Sequence[Fact], rule: dict[str, Any], missing: list[str]
) -> tuple[str, list[Fact]]:
    """What the record holds in place of a missing group (``alternatives``: clopidogrel alone
    where aspirin cannot be taken, 2011 ACCF/AHA CABG guideline), going home, to confirm or at
    home, and the allergy or intolerance that would explain it, or that none is recorded: "no
    aspirin" beside an active clopidogrel order read to a reader as a line that had not seen
    it, and a line that called the alternative one "for a patient who cannot take" aspirin read
    to two readers as a claim the allergy list did not bear out."""
    said, facts = [], []
    for group in missing:
        alternative = rule.get("alternatives", {}).get(group)
        if alternative is None:
            continue
        found = having(going_home, alternative["drugs"])
        held = held_at_home(state, alternative["drugs"])
        names = [drug_names(found)] if found else []
        names += [drug for _, drug in held]
        if not names:
            continue
        intolerance = {"keywords": alternative["intolerance"]}
        allergies = [
            f
            for f in state.facts["allergy"]
            if names_it(attributes_as(f, AllergyAttributes).substance, intolerance)
        ]
        substances = [attributes_as(f, AllergyAttributes).substance for f in allergies]
        recorded = (
            f"recorded: {'; '.join(substances)}"
            if substances
            else f"no {group} allergy or intolerance is recorded"
        )
        said.append(f"; on the record instead: {'; '.join(names)}; {recorded}")
        facts += [*found, *(f for f, _ in held), *allergies]
    return "".join(said), facts


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


def indicated_therapy_flags(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """Every rule's flags: what is ruled out first, then what is missing, then the procedure a
    drug needs and the one a condition needs, then age limits."""
    return [
        *avoided_therapy(state, going_home, therapy),
        *expected_therapy(state, going_home, therapy),
        *required_procedures(state, going_home, therapy),
        *expected_procedures(state, going_home, therapy),
        *age_limits(state, going_home, therapy),
    ]
