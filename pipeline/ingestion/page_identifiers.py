"""The identifiers a document's pages state about whom they describe: names (labelled, as
"Family, Given", in prose, or as a header repeated on several pages), dates of birth in any
common format, record identifiers and sex; read tolerantly, as OCR leaves them. Whether they are
the chart's patient is ``pipeline.ingestion.identity``'s question.
"""

from __future__ import annotations

import calendar
import contextlib
import re
from collections import Counter
from datetime import date

from pipeline.evidence.model import FoundIdentifier, IdentifierKind, Page

_MONTHS = {name.lower(): index for index, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower()[:3]: index for index, name in enumerate(calendar.month_name) if name}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# OCR reads digits as look-alike letters; in an identifier or a date they are digits.
_DIGIT_LOOKALIKES = str.maketrans(
    {"O": "0", "o": "0", "l": "1", "I": "1", "|": "1", "S": "5", "B": "8"}
)
_D = r"[0-9OoIl|SB]"
_SEP = r"\s?[/.-]\s?"
_DOB_LABEL = r"(?:D\.?O\.?B\.?|Date\s+of\s+Birth|Birth\s*Date|born\s+on|born)"
_DOB_VALUE = (
    rf"(?P<iso>{_D}{{4}}-{_D}{{1,2}}-{_D}{{1,2}})"
    rf"|(?P<a>{_D}{{1,2}}){_SEP}(?P<b>{_D}{{1,2}}){_SEP}(?P<y>{_D}(?:\s?{_D}){{3}})"
    rf"|(?P<mon>{_MONTH})\.?\s+(?P<md>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<my>\d{{4}})"
    rf"|(?P<dm>\d{{1,2}})\s+(?P<mon2>{_MONTH})\.?,?\s+(?P<my2>\d{{4}})"
)
_DOB = re.compile(rf"\b{_DOB_LABEL}\s*[:\-]?\s*(?:{_DOB_VALUE})", re.I)
_ID_LABEL = (
    r"(?:MRN|MR[I1l]N|M\.R\.N\.?|Medical\s+Record\s+(?:Number|No\.?|#)|Patient\s+ID|"
    r"Hospital\s+ID|PID|Record\s+(?:Number|No\.?))"
)
_ID = re.compile(rf"\b{_ID_LABEL}\s*[:#]?\s*(?P<value>[A-Za-z0-9][A-Za-z0-9-]{{1,30}})", re.I)
_SEX = re.compile(r"\b(?:Sex|Gender)\s*[:\-]?\s*(?P<value>Male|Female|M|F)\b", re.I)
_NAME_WORD = r"[A-Z][A-Za-z'\-]*\d*\.?"
_FULL_NAME = rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,3}}"
_LABELLED_NAME = re.compile(
    r"(?P<label>\b(?i:Patient\s+Name|Patient|Name))\s*:\s*"
    rf"(?P<value>{_NAME_WORD}(?:,?[ \t]+{_NAME_WORD}){{0,3}})"
)
# "Doctor Name:", "Emergency contact name:": someone's name, not the patient's.
_SOMEONE_ELSE = re.compile(
    r"(?:doctor|physician|provider|referring|contact|agent|nurse|guardian|emergency|father|"
    r"mother|spouse|attending|signed|witness)\W*$",
    re.I,
)
# Labels that follow a name on the same line ("PATIENT NAME: Jonathan Miller MRIN: …").
_TRAILING_LABELS = frozenset("mrn mrin dob id pid billing sex age gender date".split())
_PROSE_NAME = re.compile(
    rf"(?:^|(?<=[.\n]))\s*(?P<value>{_FULL_NAME}),?\s+(?:is\s+an?\s+\d{{1,3}}[ -]year|born\s+on)"
)
# Capitalised words that head pages or sentences but name nobody.
_NOT_NAMES = frozenset(
    """
    patient patients summary report final information name names vital signs sign record records
    medical history physical discharge admission clinic hospital doctor dr mr mrs ms page part
    date birth note notes progress assessment plan the a an this of and demographics lifestyle
    vitals universal advance digital directive agent primary alternate healthcare ct chest
    abdomen pelvis impression findings results laboratory labs department emergency
    """.split()
)


def digits(text: str) -> str:
    return text.translate(_DIGIT_LOOKALIKES)


def _date_readings(match: re.Match[str]) -> list[str]:
    parts = {key: value for key, value in match.groupdict().items() if value}
    readings: list[date] = []

    def add(year: str, month: int | str, day: str) -> None:
        with contextlib.suppress(ValueError):  # not a date in this reading
            readings.append(date(int(digits(year)), int(digits(str(month))), int(digits(day))))

    if "iso" in parts:
        year, month, day = digits(parts["iso"]).split("-")
        add(year, month, day)
    elif "a" in parts:
        year = re.sub(r"\s", "", parts["y"])
        add(year, parts["b"], parts["a"])  # day/month
        add(year, parts["a"], parts["b"])  # month/day
    elif "mon" in parts:
        add(parts["my"], _MONTHS[parts["mon"].lower()[:3]], parts["md"])
    elif "mon2" in parts:
        add(parts["my2"], _MONTHS[parts["mon2"].lower()[:3]], parts["dm"])
    return sorted({reading.isoformat() for reading in readings})


def name_tokens(text: str) -> list[str]:
    """A name's words, lower-cased, without digits (Synthea's "Zane918") or punctuation, with
    OCR's favourite confusions folded ("rn" read for "m", "vv" for "w") on both sides."""
    folded = re.sub(r"\d", "", text).replace("rn", "m").replace("vv", "w")
    words = re.findall(r"[A-Za-z][A-Za-z'\-]*", folded)
    return [
        word.lower().strip("'-")
        for word in words
        if word.lower().rstrip(".") not in {"mr", "mrs", "ms", "dr"}
    ]


def _is_name(tokens: list[str]) -> bool:
    return bool(tokens) and not any(token in _NOT_NAMES for token in tokens)


def _page_header_names(pages: list[Page]) -> list[tuple[int, int, int, str]]:
    """A line of two to four capitalised words heading two or more pages: the document's
    subject, as forms print it."""
    tops: Counter[str] = Counter()
    where: dict[str, tuple[int, int, int]] = {}
    for page in pages:
        offset = 0
        for line in page.text.splitlines(keepends=True)[:3]:
            stripped = line.strip()
            header = re.fullmatch(rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{1,3}}", stripped)
            if header and _is_name(name_tokens(stripped)):
                tops[stripped] += 1
                start = offset + line.index(stripped)
                where.setdefault(stripped, (page.number, start, start + len(stripped)))
            offset += len(line)
    return [(*where[name], name) for name, count in tops.items() if count >= 2]


def _found(
    kind: IdentifierKind, text: str, values: list[str], page: int, start: int, end: int
) -> FoundIdentifier:
    return FoundIdentifier(kind=kind, text=text, values=values, page=page, start=start, end=end)


def find_identifiers(pages: list[Page]) -> list[FoundIdentifier]:
    """Every identifier the pages state, in page order, with where it is."""
    found: list[FoundIdentifier] = []
    for page in pages:
        text, number = page.text, page.number
        for match in _DOB.finditer(text):
            if readings := _date_readings(match):
                found.append(_found("birth_date", match.group(0), readings, number, *match.span()))
        for match in _ID.finditer(text):
            value = match.group("value")
            if any(ch.isdigit() for ch in digits(value)):
                found.append(
                    _found("identifier", match.group(0), [value], number, *match.span("value"))
                )
        for match in _SEX.finditer(text):
            sex = "female" if match.group("value").lower().startswith("f") else "male"
            found.append(_found("sex", match.group(0), [sex], number, *match.span()))
        for pattern in (_LABELLED_NAME, _PROSE_NAME):
            for match in pattern.finditer(text):
                if "label" in match.groupdict() and _SOMEONE_ELSE.search(
                    text[max(0, match.start() - 30) : match.start()]
                ):
                    continue
                value = match.group("value").strip()
                while value.split() and value.split()[-1].lower().strip(":.") in _TRAILING_LABELS:
                    value = value.rsplit(None, 1)[0] if " " in value else ""
                if value and _is_name(name_tokens(value)):
                    start = match.start("value")
                    found.append(_found("name", value, [value], number, start, start + len(value)))
    for number, start, end, name in _page_header_names(pages):
        found.append(_found("name", name, [name], number, start, end))
    return found
