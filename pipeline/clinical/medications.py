"""Normalised forms of drug names, strengths, doses, frequencies and routes, for comparison only.

What is shown to people is always the source's own wording; these forms exist so that "10mg"
equals "10 mg", "1 g" equals "1000 mg", "b.i.d." equals "2 times daily" and "PO" equals "oral"
when medications are reconciled or checked for conflicts.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_NUMBER = r"(?:\d+(?:[.,]\d+)?|[.,]\d+)"
_QUANTITY = re.compile(rf"(?P<value>{_NUMBER})\s*(?P<unit>[a-zA-Zµμ%{{}}\[\]]+(?:/[a-zA-Z]+)?)?")
_STRENGTH = re.compile(
    rf"{_NUMBER}\s*(?:mg|mcg|µg|ug|g|ml|meq|unt|units?|iu|%)(?:\s*/\s*(?:ml|mg|actuat|hr|g))?",
    re.IGNORECASE,
)
_FORM_WORDS = frozenset(
    """
    oral tablet tablets tab tabs capsule capsules cap caps extended release delayed sustained
    chewable disintegrating film coated injectable injection suspension solution inhalation
    inhaler powder spray mucosal topical cream ointment gel patch transdermal prefilled syringe
    pen auto-injector metered dose dry nasal ophthalmic otic rectal suppository vaginal enteric
    abuse-deterrent
    hr 24 12 actuat mg ml mcg g unt units unit iu meq for product kit pack
    """.split()
)

_UNIT_ALIASES = {
    "mg": ("mg", Fraction(1)),
    "milligram": ("mg", Fraction(1)),
    "milligrams": ("mg", Fraction(1)),
    "g": ("mg", Fraction(1000)),
    "gram": ("mg", Fraction(1000)),
    "grams": ("mg", Fraction(1000)),
    "mcg": ("mg", Fraction(1, 1000)),
    "ug": ("mg", Fraction(1, 1000)),
    "µg": ("mg", Fraction(1, 1000)),
    "μg": ("mg", Fraction(1, 1000)),
    "microgram": ("mg", Fraction(1, 1000)),
    "ml": ("ml", Fraction(1)),
    "l": ("ml", Fraction(1000)),
    "unt": ("unit", Fraction(1)),
    "unit": ("unit", Fraction(1)),
    "units": ("unit", Fraction(1)),
    "iu": ("unit", Fraction(1)),
    "meq": ("meq", Fraction(1)),
    "tab": ("tablet", Fraction(1)),
    "tabs": ("tablet", Fraction(1)),
    "tablet": ("tablet", Fraction(1)),
    "tablets": ("tablet", Fraction(1)),
    "{tablet}": ("tablet", Fraction(1)),
    "cap": ("capsule", Fraction(1)),
    "capsule": ("capsule", Fraction(1)),
    "capsules": ("capsule", Fraction(1)),
    "puff": ("puff", Fraction(1)),
    "puffs": ("puff", Fraction(1)),
}

_FREQUENCY_WORDS = {
    "qd": Fraction(1),
    "q.d": Fraction(1),
    "od": Fraction(1),
    "daily": Fraction(1),
    "once daily": Fraction(1),
    "once a day": Fraction(1),
    "every day": Fraction(1),
    "qam": Fraction(1),
    "qpm": Fraction(1),
    "qhs": Fraction(1),
    "q.h.s": Fraction(1),
    "at bedtime": Fraction(1),
    "bid": Fraction(2),
    "b.i.d": Fraction(2),
    "twice daily": Fraction(2),
    "twice a day": Fraction(2),
    "tid": Fraction(3),
    "t.i.d": Fraction(3),
    "three times daily": Fraction(3),
    "three times a day": Fraction(3),
    "qid": Fraction(4),
    "q.i.d": Fraction(4),
    "four times daily": Fraction(4),
    "four times a day": Fraction(4),
    "qod": Fraction(1, 2),
    "q.o.d": Fraction(1, 2),
    "every other day": Fraction(1, 2),
    "hourly": Fraction(24),
    "every hour": Fraction(24),
    "monthly": Fraction(1, 30),
    "once monthly": Fraction(1, 30),
    "weekly": Fraction(1, 7),
    "once weekly": Fraction(1, 7),
    "once a week": Fraction(1, 7),
}
# Longest phrase first, so "once daily" is not read as "daily" alone.
_FREQUENCY_PHRASES = sorted(_FREQUENCY_WORDS.items(), key=lambda item: -len(item[0]))
_PERIOD_DAYS = {
    "s": Fraction(1, 86400),
    "min": Fraction(1, 1440),
    "h": Fraction(1, 24),
    "hour": Fraction(1, 24),
    "hours": Fraction(1, 24),
    "d": Fraction(1),
    "daily": Fraction(1),
    "day": Fraction(1),
    "days": Fraction(1),
    "wk": Fraction(7),
    "week": Fraction(7),
    "weeks": Fraction(7),
    "mo": Fraction(30),
    "month": Fraction(30),
    "months": Fraction(30),
}
_TIMES_PER = re.compile(
    rf"(?:(?P<count>{_NUMBER})\s*(?:times?|x)|(?P<count_word>once|twice))\s*"
    rf"(?:per|a|an|every|each|/)?\s*"
    rf"(?P<period>{_NUMBER})?\s*(?P<unit>daily|day|days|d|h|hours?|wk|weeks?|mo|months?)\b",
)
_EVERY = re.compile(
    rf"(?:every|q)\s*(?P<period>{_NUMBER})\s*(?P<unit>h|hours?|d|days?|wk|weeks?)\b"
)
_ROUTES = {
    "po": "oral",
    "p.o": "oral",
    "oral": "oral",
    "by mouth": "oral",
    "orally": "oral",
    "oral route": "oral",
    "iv": "intravenous",
    "i.v": "intravenous",
    "intravenous": "intravenous",
    "intravenously": "intravenous",
    "im": "intramuscular",
    "intramuscular": "intramuscular",
    "sc": "subcutaneous",
    "sq": "subcutaneous",
    "subcut": "subcutaneous",
    "subcutaneous": "subcutaneous",
    "sl": "sublingual",
    "sublingual": "sublingual",
    "topical": "topical",
    "inhaled": "inhalation",
    "inhalation": "inhalation",
    "respiratory tract route": "inhalation",
    "pr": "rectal",
    "rectal": "rectal",
    "transdermal": "transdermal",
    "nasal": "nasal",
    "intranasal": "nasal",
}


def _to_fraction(number: str) -> Fraction:
    try:
        return Fraction(Decimal(number.replace(",", ".")))
    except InvalidOperation as error:
        raise ValueError(f"not a number: {number!r}") from error


def _format(value: Fraction) -> str:
    decimal = round(Decimal(value.numerator) / Decimal(value.denominator), 4)
    text = format(decimal.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def normalise_quantity(text: str | None) -> str | None:
    """A dose or strength in canonical units: "10mg" and "0.01 g" both give "10 mg"."""
    if not text:
        return None
    parts = []
    for match in _QUANTITY.finditer(text.replace("µ", "µ")):
        value = _to_fraction(match.group("value"))
        unit = (match.group("unit") or "").lower()
        base, _, per = unit.partition("/")
        canonical, factor = _UNIT_ALIASES.get(base, (base, Fraction(1)))
        rendered = f"{_format(value * factor)} {canonical}".strip()
        parts.append(f"{rendered}/{per}" if per else rendered)
    return " + ".join(parts) if parts else " ".join(text.lower().split())


def normalise_frequency(text: str | None) -> str | None:
    """Doses per day as a canonical string: "b.i.d.", "twice daily", "2 times per 1 d" → "2/d"."""
    if not text:
        return None
    lowered = " ".join(text.lower().replace("-", " ").split()).rstrip(".")
    as_needed = any(word in lowered for word in ("prn", "p.r.n", "as needed"))
    per_day: Fraction | None = None
    if match := _TIMES_PER.search(lowered):
        word = match.group("count_word")
        count = Fraction(1 if word == "once" else 2) if word else _to_fraction(match["count"])
        period = _to_fraction(match.group("period")) if match.group("period") else Fraction(1)
        per_day = count / (period * _PERIOD_DAYS[match.group("unit")])
    if per_day is None and (match := _EVERY.search(lowered)):
        per_day = 1 / (_to_fraction(match.group("period")) * _PERIOD_DAYS[match.group("unit")])
    if per_day is None:
        for phrase, rate in _FREQUENCY_PHRASES:
            if re.search(rf"(?<![a-z.]){re.escape(phrase)}(?![a-z])", lowered):
                per_day = rate
                break
    if per_day is None:
        return "as needed" if as_needed else lowered
    rendered = f"{_format(per_day)}/d"
    return f"{rendered} as needed" if as_needed else rendered


def normalise_route(text: str | None) -> str | None:
    if not text:
        return None
    lowered = " ".join(text.lower().split()).rstrip(".")
    lowered = re.sub(r"\s*\(qualifier value\)$", "", lowered)
    return _ROUTES.get(lowered, lowered)


def strength_of(name: str) -> str | None:
    """The strength written in a drug's name ("Simvastatin 20 MG Oral Tablet" → "20 MG")."""
    found = [" ".join(match.group(0).split()) for match in _STRENGTH.finditer(name)]
    return " / ".join(found) if found else None


# Dose forms that say the route, as RxNorm names write them ("… Oral Tablet").
_FORM_ROUTES = (
    ("oral", "oral"),
    ("chewable", "oral"),
    ("sublingual", "sublingual"),
    ("mucosal", "oromucosal"),
    ("buccal", "buccal"),
    ("inhal", "inhalation"),
    ("nasal", "nasal"),
    ("transdermal", "transdermal"),
    ("topical", "topical"),
    ("cream", "topical"),
    ("ointment", "topical"),
    ("ophthalmic", "ophthalmic"),
    ("otic", "otic"),
    ("rectal", "rectal"),
    ("suppository", "rectal"),
    ("vaginal", "vaginal"),
)


def route_of_form(name: str) -> str | None:
    """The route a drug name's dose form states ("Oral Tablet" → oral), or None."""
    lowered = name.lower()
    for word, route in _FORM_ROUTES:
        if re.search(rf"\b{word}", lowered):
            return route
    return None


def drug_key(name: str) -> str:
    """The ingredient part of a drug name, for matching one drug across strengths and forms."""
    lowered = re.sub(r"\[[^\]]*\]", " ", name.lower())
    lowered = _STRENGTH.sub(" ", lowered)
    words = [word for word in re.split(r"[^a-z0-9-]+", lowered) if word]
    kept = [word for word in words if word not in _FORM_WORDS and not word.isdigit()]
    return " ".join(kept) or " ".join(words)


def main_ingredient(name: str) -> str:
    """The first word of a drug's key: "metoprolol" of "24 HR metoprolol succinate 100 MG …"."""
    words = drug_key(name).split()
    return words[0] if words else name.lower()


def same_quantity(left: str | None, right: str | None) -> bool:
    return normalise_quantity(left) == normalise_quantity(right)


def ingredients(name: str) -> list[str]:
    """Every ingredient of a drug name, in order: RxNorm names a combination product's parts
    with " / " ("Hydrochlorothiazide 25 MG / Lisinopril 10 MG Oral Tablet" → hydrochlorothiazide,
    lisinopril), so a rule that reads only the first would miss the ACE inhibitor in it."""
    without_brand = re.sub(r"\[[^\]]*\]", " ", name)
    parts = [part for part in re.split(r"\s/\s", without_brand) if part.strip()]
    found = [main_ingredient(part) for part in parts] or [main_ingredient(name)]
    return list(dict.fromkeys(found))
