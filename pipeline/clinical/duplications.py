"""Drug classes by ingredient, and their duplications at discharge: the same ingredient in two
orders, or two ingredients of one class the ``drug_classes`` table says must not be given
together (an ACE inhibitor with an ARB). Computed in code, flagged for the physician, never
decided; moved out of :mod:`pipeline.clinical.drug_classes`, which runs every medication rule.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pipeline.clinical.medications import ingredients
from pipeline.clinical.risk_flags import RAISED_BY
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import Fact, MedicationAttributes, ReviewFlag, attributes_as


def _drug_name(fact: Fact) -> str:
    return attributes_as(fact, MedicationAttributes).name


def _words(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+", name.lower()))


def classes_of(name: str, drug_table: CodeTable) -> set[str]:
    """The classes whose ingredients a drug name contains."""
    words = _words(name)
    return {
        therapeutic
        for therapeutic, ingredients in drug_table.extra["classes"].items()
        if words & set(ingredients)
    }


def _named(facts: list[Fact], unconfirmed: frozenset[str], held: frozenset[str]) -> str:
    return "; ".join(
        _drug_name(f)
        + (" (order to confirm)" if f.id in unconfirmed else "")
        + (" (at home, held or stopped?)" if f.id in held else "")
        for f in facts
    )


def duplication_flags(
    discharge: list[Fact],
    drug_table: CodeTable,
    unconfirmed: frozenset[str] = frozenset(),
    held: frozenset[str] = frozenset(),
) -> list[ReviewFlag]:
    """The same ingredient in two orders (metoprolol succinate beside metoprolol tartrate, an
    ingredient alone and inside a combination), and two different ingredients of one duplicated
    class group, among discharge medications, orders to confirm and home drugs held or stopped
    (which may still be taken: named as such). One cause, one line: a same-drug pair among a
    class duplication's drugs is said on that line ("opioid; oxycodone twice"), never on a line
    of its own that readers read as a second flag about the same list."""
    by_ingredient: dict[str, list[Fact]] = defaultdict(list)
    for fact in discharge:
        for ingredient in ingredients(_drug_name(fact)):
            by_ingredient[ingredient].append(fact)
    twice = {ingredient: facts for ingredient, facts in by_ingredient.items() if len(facts) > 1}
    flags, said = [], set()
    classes = drug_table.extra["classes"]
    for group in drug_table.extra["duplications"]:
        members = {ingredient for name in group for ingredient in classes.get(name, [])}
        facts = [f for f in discharge if _words(_drug_name(f)) & members]
        if len({i for f in facts for i in _words(_drug_name(f)) & members}) < 2:
            continue
        inside = [i for i, same in twice.items() if {f.id for f in same} <= {f.id for f in facts}]
        said |= set(inside)
        what = "; ".join([" or ".join(group), *(f"{i} twice" for i in inside)])
        named = _named(facts, unconfirmed, held)
        flags.append(
            ReviewFlag.on_facts(
                ("duplication",),
                "therapeutic_duplication",
                f"Therapeutic duplication at discharge ({what}): {named}",
                RAISED_BY,
                [f.id for f in facts],
            )
        )
    return [
        ReviewFlag.on_facts(
            ("same-drug",),
            "therapeutic_duplication",
            f"The same drug twice at discharge ({ingredient}): {_named(facts, unconfirmed, held)}",
            RAISED_BY,
            [f.id for f in facts],
        )
        for ingredient, facts in twice.items()
        if ingredient not in said
    ] + flags
