"""Drug classes by ingredient, and their duplications at discharge: the same ingredient in two
orders, or two ingredients of one class the ``drug_classes`` table says must not be given
together (an ACE inhibitor with an ARB). Computed in code, flagged for the physician, never
decided; moved out of :mod:`pipeline.clinical.drug_classes`, which runs every medication rule.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from pipeline.clinical.medications import ingredients
from pipeline.clinical.risk_flags import RAISED_BY
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import Fact, MedicationAttributes, ReviewFlag, attributes_as

# How a line counts the drugs of one kind ("two long-acting").
_COUNT = {2: "two", 3: "three", 4: "four"}


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
    (which may still be taken: named as such); of a class whose long- and short-acting members
    go together (``basal_and_rescue``), only two of one kind. One cause, one line: a same-drug
    pair among a class duplication's drugs is said on that line ("opioid; oxycodone twice"),
    never on a line of its own that readers read as a second flag about the same list."""
    classes = drug_table.extra["classes"]
    rescue = drug_table.extra.get("basal_and_rescue", {})
    paired = {i for name in rescue.get("classes", []) for i in classes.get(name, [])}
    by_ingredient: dict[str, list[Fact]] = defaultdict(list)
    for fact in discharge:
        for ingredient in ingredients(_drug_name(fact)):
            by_ingredient[ingredient].append(fact)
    twice = {
        ingredient: same
        for ingredient, facts in by_ingredient.items()
        if len(same := _same_kind(facts, rescue) if ingredient in paired else facts) > 1
    }
    flags, said = [], set()
    for group in drug_table.extra["duplications"]:
        members = {ingredient for name in group for ingredient in classes.get(name, [])}
        facts = [f for f in discharge if _words(_drug_name(f)) & members]
        kinds: list[str] = []
        if members & paired:
            facts = _same_kind(facts, rescue)
            counted = Counter(_kind(f, rescue) for f in facts)
            kinds = [f"{_COUNT.get(n, str(n))} {kind}" for kind, n in sorted(counted.items())]
        if len({i for f in facts for i in _words(_drug_name(f)) & members}) < 2:
            continue
        inside = [i for i, same in twice.items() if {f.id for f in same} <= {f.id for f in facts}]
        said |= set(inside)
        what = "; ".join([" or ".join(group), *kinds, *(f"{i} twice" for i in inside)])
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


def _same_kind(facts: list[Fact], rescue: dict[str, list[str]]) -> list[Fact]:
    """Of a class whose long- and short-acting members go together (a long-acting opioid and
    an immediate-release one for breakthrough pain: one regimen), the drugs that share their
    kind with another: only those duplicate each other."""
    kinds: dict[str, list[Fact]] = defaultdict(list)
    for fact in facts:
        kinds[_kind(fact, rescue)].append(fact)
    return [fact for kind in kinds.values() if len(kind) > 1 for fact in kind]


def _kind(fact: Fact, rescue: dict[str, list[str]]) -> str:
    name = _drug_name(fact).lower()
    long_acting = any(word in name for word in rescue["long_acting_words"]) or bool(
        _words(name) & set(rescue["long_acting_ingredients"])
    )
    return "long-acting" if long_acting else "immediate-release"
