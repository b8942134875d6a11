"""Numbers and dates as a sentence writes them, and as people say them.

Every number with its unit, or what it counts ("10-year-old" is an age, "10 days" a span of days);
list numbering is no number. Dates in ISO, US and written forms ("2024-01-03" = "Jan 3, 2024" =
"01/03/2024"), and said in words ("April fifteenth two thousand five"). Pure functions over text:
the checker compares what a sentence states with what its evidence holds.
"""

from __future__ import annotations

import calendar
import contextlib
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from pipeline.clinical.medications import normalise_quantity

_MONTHS = {name.lower(): index for index, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): index for index, name in enumerate(calendar.month_abbr) if name}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?"),
    re.compile(
        rf"\b(?P<mon>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I
    ),
    re.compile(rf"\b(?P<d>\d{{1,2}})\s+(?P<mon>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b", re.I),
    re.compile(r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})\b"),
)
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9.])(?P<value>\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s?(?P<unit>mg|mcg|µg|g|kg|ml|mL|l|L|meq|mmol|mol|units?|unt|iu|%|mmhg|mm\[hg\]|cm|mm|bpm)"
    r"(?![A-Za-z]))?",
    re.IGNORECASE,
)
# "1. Bipolar disorder. 2. Anemia.": the numbers of a list state nothing.
_ENUMERATOR = re.compile(r"\d{1,2}[.)](?:\s+[A-Za-z]|\s*$)")
_LINE_START = re.compile(r"(?:^|\n|[.;:]\s+)\s*$")
# Numbers as people say them, in dialogues and dictated notes: "twenty-six", "fifth".
_UNITS_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}  # fmt: skip
_NUMBER_WORD = (
    {word: index for index, word in enumerate(_UNITS_WORDS)}
    | {word: 10 * (index + 2) for index, word in enumerate(_TENS_WORDS)}
    # "in their seventies" is 70s.
    | {word[:-1] + "ies": 10 * (index + 2) for index, word in enumerate(_TENS_WORDS)}
)
# A date as people say it: "April fifteenth two thousand five", "the fourth of June, 2009".
_DAY_WORD = "|".join(sorted([*_ORDINALS, *_NUMBER_WORD], key=len, reverse=True))
_DAY = rf"(?:(?:twenty|thirty)[ -](?:{_DAY_WORD})|{_DAY_WORD}|\d{{1,2}}(?:st|nd|rd|th)?)"
_SPOKEN_DATE = re.compile(
    rf"\b(?:(?P<mon>{_MONTH})\s+(?:the\s+)?(?P<day>{_DAY})"
    rf"|(?:the\s+)?(?P<day2>{_DAY})\s+of\s+(?P<mon2>{_MONTH}))"
    r",?\s+(?:in\s+)?(?P<year>\d{4}|(?:[a-z]+[ -]){1,4}[a-z]+)",
    re.I,
)


def normal_number(text: str) -> str:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    normal = format(value.normalize(), "f")
    return normal.rstrip("0").rstrip(".") if "." in normal else normal


def find_dates(text: str) -> list[tuple[int, int, date]]:
    """Dates written in ``text``, as (start, end, date), non-overlapping."""
    found: list[tuple[int, int, date]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end, _ in found):
                continue
            parts = match.groupdict()
            month = int(parts["m"]) if parts.get("m") else _MONTHS[parts["mon"].lower()]
            try:
                found.append(
                    (match.start(), match.end(), date(int(parts["y"]), month, int(parts["d"])))
                )
            except ValueError:
                continue
    return sorted(found)


# What a number counts when no unit follows it: "10-year-old" is an age, "10 days" a span of days.
_COUNTED = re.compile(
    r"\s?-?(?P<what>(?:years?|yrs?)[- ]old|y/?o|years?|yrs?|months?|mos|weeks?|wks?|days?"
    r"|hours?|hrs?|minutes?|mins?|times?)(?![A-Za-z])",
    re.IGNORECASE,
)
_KINDS = {"yr": "year", "yrs": "year", "mos": "month", "wk": "week", "wks": "week", "hr": "hour"}
_KINDS |= {"hrs": "hour", "min": "minute", "mins": "minute", "yo": "age", "y/o": "age"}


def _kind(word: str) -> str:
    """One name for what a number counts: "years old" and "yo" are an age, "hrs" hours."""
    lowered = word.lower()
    if lowered.endswith("old"):
        return "age"
    return _KINDS.get(lowered, lowered).removesuffix("s")


@dataclass(frozen=True, slots=True)
class NumberMention:
    start: int
    end: int
    text: str
    value: str
    quantity: str | None
    # What the number counts (its unit, or "age", "day", "time"…); None for a bare number.
    kind: str | None = None


# An identifier, not a quantity: Provenote's own ids ("note-3f2a9c1d0b7e4411") and other runs
# of hex digits mixing letters and digits. Their digits are never read as numbers.
_IDENTIFIER = re.compile(
    r"\b[a-z][a-z_]*-[0-9a-f]{8,}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,}\b",
    re.IGNORECASE,
)


def find_numbers(text: str) -> list[NumberMention]:
    """Numbers outside dates, identifiers and list numbering, with their unit or what they
    count."""
    skipped = [(start, end, "") for start, end, _ in find_dates(text)] + [
        (found.start(), found.end(), "") for found in _IDENTIFIER.finditer(text)
    ]
    mentions = []
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end, _ in skipped):
            continue
        if _ENUMERATOR.match(text, match.start()) and _LINE_START.search(text[: match.start()]):
            continue
        unit = match.group("unit")
        value = normal_number(match.group("value"))
        quantity = normalise_quantity(f"{value} {unit}") if unit else None
        counted = None if unit else _COUNTED.match(text, match.end())
        kind = _kind(unit) if unit else (_kind(counted.group("what")) if counted else None)
        end = counted.end() if counted else match.end()
        mentions.append(
            NumberMention(match.start(), end, text[match.start() : end], value, quantity, kind)
        )
    return mentions


def spelled_numbers(text: str) -> set[str]:
    """The numbers ``text`` spells out, as people say them in dialogues and dictation:
    "twenty-six" is 26, "fifth" 5, "one hundred thirty three" 133, "two thousand and eight" 2008,
    "nineteen sixty one" 1961 (each word's own value is kept too)."""
    found: set[str] = set()
    run: list[int | str] = []
    for word in [*re.findall(r"[a-z]+", text.lower()), ""]:
        if word in _NUMBER_WORD or word in _ORDINALS:
            run.append(_NUMBER_WORD.get(word, _ORDINALS.get(word, 0)))
        elif word in {"hundred", "thousand"} or (
            word == "and" and run[-1:] in (["hundred"], ["thousand"])
        ):
            run.append(word)
        elif run:
            found |= _run_values(run)
            run = []
    return found


def spoken_dates(text: str) -> set[date]:
    """Dates said in words ("April fifteenth two thousand five"), as evidence for a summary's
    "04/15/2005"."""
    found = set()
    for match in _SPOKEN_DATE.finditer(text):
        month = _MONTHS[(match.group("mon") or match.group("mon2")).lower()]
        day_text = (match.group("day") or match.group("day2")).lower().replace("-", " ")
        digits = re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", day_text)
        spoken = [int(v) for v in spelled_numbers(day_text) if 1 <= int(v) <= 31]
        days = {max(spoken)} if spoken else set()
        days |= {int(digits)} if digits.isdigit() else set()
        year_text = match.group("year").lower()
        years = {int(v) for v in spelled_numbers(year_text) if 1900 <= int(v) <= 2100}
        years |= {int(year_text)} if year_text.isdigit() else set()
        for day in days:
            for year in years:
                with contextlib.suppress(ValueError):
                    found.add(date(year, month, day))
    return found


def _run_values(run: list[int | str]) -> set[str]:
    numbers = [item for item in run if isinstance(item, int)]
    values = set(numbers)
    if "hundred" not in run and "thousand" not in run:
        # Tens then units ("twenty six"); a year said in pairs ("nineteen sixty one").
        pairs: list[int] = []
        for number in numbers:
            if pairs and pairs[-1] >= 20 and pairs[-1] % 10 == 0 and 0 < number < 10:
                pairs[-1] += number
            else:
                pairs.append(number)
        values |= set(pairs)
        if len(pairs) == 2 and 10 <= pairs[0] <= 99 and 0 <= pairs[1] <= 99:
            values.add(pairs[0] * 100 + pairs[1])
        return {str(value) for value in values}
    total = current = 0
    for item in run:
        if item == "hundred":
            current = max(current, 1) * 100
        elif item == "thousand":
            total += max(current, 1) * 1000
            current = 0
        elif isinstance(item, int):
            current += item
    values.add(total + current)
    return {str(value) for value in values}
