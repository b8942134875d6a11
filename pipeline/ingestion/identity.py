"""Two identifiers on every document: whose note is this?

Hospitals confirm a patient's identity with at least two identifiers before acting (name, date of
birth, medical record number). A document attached to a chart may be about someone else, above
all a PDF or a scan from outside; citing it would put another patient's facts in this patient's
discharge summary. So each document's pages are searched for the identifiers they state:

- **names**: after a label ("Patient Name:", "Name:"), as "Family, Given", in prose ("Martha
  Collins is a 50-year-old…", "Kimberly Lawrence, born on…"), or as a page header repeated on
  several pages;
- **dates of birth**: after a label ("DOB", "Date of Birth", "born on"), in any common format
  (``28/12/1965`` and ``12/28/1965`` are both read where both are dates, ``1965-12-28``,
  ``Dec 28, 1965``);
- **identifiers**: after a label (MRN, medical record number, patient ID, hospital ID, PID);
- **sex**, where labelled.

Text may come from OCR, so comparison tolerates its noise: names within an edit distance that
grows with their length, digits read as letters (``O``/``0``, ``l``/``1``, ``S``/``5``,
``B``/``8``), a date split by a stray space. Each identifier is compared with the chart's
Patient (every name, the birth date, every identifier, the gender):

- ``mismatch``: an identifier clearly names someone else (no stated date of birth is the
  chart's, an identifier is none of the chart's, a full name is far from every chart name, the
  labelled sex is the other one). The document is not evidence: nothing in it is cited.
- ``match``: at least two of name, date of birth and identifier agree, and none contradicts.
- ``unverified``: anything else (no identifier found, or only one agrees). Allowed, and said.
"""

from __future__ import annotations

import calendar
import contextlib
import re
from collections import Counter
from datetime import date

from pydantic import BaseModel, Field

from pipeline.evidence.model import (
    Fact,
    FoundIdentifier,
    IdentifierKind,
    IdentityCheck,
    Page,
    PatientInfoAttributes,
    PersonName,
    SourceDocument,
)

# Name, birth date and record identifier count towards the two; sex only ever contradicts.
COUNTED_KINDS = frozenset({"name", "birth_date", "identifier"})

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


class ChartIdentity(BaseModel):
    """Who the chart is about: every name, the birth date, every identifier, the gender."""

    names: list[PersonName] = Field(default_factory=list)
    birth_date: date | None = None
    identifiers: list[str] = Field(default_factory=list)
    gender: str | None = None


def _digits(text: str) -> str:
    return text.translate(_DIGIT_LOOKALIKES)


def _date_readings(match: re.Match[str]) -> list[str]:
    parts = {key: value for key, value in match.groupdict().items() if value}
    readings: list[date] = []

    def add(year: str, month: int | str, day: str) -> None:
        with contextlib.suppress(ValueError):  # not a date in this reading
            readings.append(date(int(_digits(year)), int(_digits(str(month))), int(_digits(day))))

    if "iso" in parts:
        year, month, day = _digits(parts["iso"]).split("-")
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


def _name_tokens(text: str) -> list[str]:
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
            if header and _is_name(_name_tokens(stripped)):
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
            if any(ch.isdigit() for ch in _digits(value)):
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
                if value and _is_name(_name_tokens(value)):
                    start = match.start("value")
                    found.append(_found("name", value, [value], number, start, start + len(value)))
    for number, start, end, name in _page_header_names(pages):
        found.append(_found("name", name, [name], number, start, end))
    return found


def edit_distance(left: str, right: str) -> int:
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, start=1):
        current = [i]
        for j, b in enumerate(right, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def _close(word: str, other: str) -> bool:
    """The same name despite OCR noise: within about one edit in four letters; an initial
    matches the name it abbreviates; a name cut at the page edge ("nathan") its whole."""
    word, other = word.rstrip("."), other.rstrip(".")
    if not word or not other:
        return False
    if len(word) == 1 or len(other) == 1:
        return word[0] == other[0]
    if len(word) >= 4 and (other.endswith(word) or word.endswith(other)):
        return True
    return edit_distance(word, other) <= max(1, min(len(word), len(other)) // 4)


def _name_agrees(tokens: list[str], chart: ChartIdentity) -> bool | None:
    """True: one of the chart's names (given and family, or all its words given: "Susana117
    Guillermina633" for Susana Guillermina Espino); False: a name with no word of any chart
    name; None: too little to tell (a single word that is no chart name, or a name sharing a
    word with the chart's, as a relative's may)."""
    every_word: set[str] = set()
    for name in chart.names:
        givens = [word for given in name.given for word in _name_tokens(given)]
        family = _name_tokens(name.family or "")
        every_word |= {*givens, *family}
        family_close = any(_close(token, word) for token in tokens for word in family)
        given_close = any(_close(token, word) for token in tokens for word in givens)
        all_close = all(any(_close(t, w) for w in [*givens, *family]) for t in tokens)
        if len(tokens) > 1 and ((family_close and given_close) or all_close):
            return True
    if any(_close(token, word) for token in tokens for word in every_word):
        return True if len(tokens) == 1 else None
    return None if len(tokens) == 1 else False


def _agrees(found: FoundIdentifier, chart: ChartIdentity) -> bool | None:
    if found.kind == "birth_date":
        return None if chart.birth_date is None else chart.birth_date.isoformat() in found.values
    if found.kind == "identifier":
        if not chart.identifiers:
            return None
        value = _digits(found.values[0]).upper()
        return any(_digits(known).upper() == value for known in chart.identifiers)
    if found.kind == "sex":
        if chart.gender not in {"male", "female"}:
            return None
        return found.values[0] == chart.gender
    if not chart.names:
        return None
    text = found.values[0]
    if "," in text:  # "Levin, Henry L.": family name first
        family, _, given = text.partition(",")
        text = f"{given} {family}"
    return _name_agrees(_name_tokens(text), chart)


def check_identity(pages: list[Page], chart: ChartIdentity) -> IdentityCheck:
    """The document's verdict against the chart, with every identifier found and whether it
    agrees. Kinds are decided together: a document stating the chart's date of birth and
    another one (a typo, a relative's) is not taken for someone else's."""
    found = [
        identifier.model_copy(update={"agrees": _agrees(identifier, chart)})
        for identifier in find_identifiers(pages)
    ]
    agreeing = {f.kind for f in found if f.agrees is True}
    contradicting = sorted({f.kind for f in found if f.agrees is False and f.kind not in agreeing})
    if contradicting:
        where = "; ".join(
            f"{f.kind.replace('_', ' ')} {f.text.strip()!r} (page {f.page})"
            for f in found
            if f.agrees is False and f.kind in contradicting
        )
        return IdentityCheck(
            verdict="mismatch",
            reason=f"document may belong to another patient: {where}",
            found=found,
        )
    counted = sorted(agreeing & COUNTED_KINDS)
    if len(counted) >= 2:
        kinds = " and ".join(kind.replace("_", " ") for kind in counted)
        return IdentityCheck(verdict="match", reason=f"{kinds} agree with the chart", found=found)
    if not found:
        return IdentityCheck(verdict="unverified", reason="no patient identifier found")
    return IdentityCheck(
        verdict="unverified",
        reason="fewer than two identifiers agree with the chart"
        + (f" (only {counted[0].replace('_', ' ')})" if counted else ""),
        found=found,
    )


def chart_identity(facts: list[Fact]) -> ChartIdentity:
    """Who the chart is about, from its patient fact (none: nothing to compare with)."""
    for fact in facts:
        if isinstance(fact.attributes, PatientInfoAttributes):
            patient = fact.attributes
            return ChartIdentity(
                names=patient.names,
                birth_date=patient.birth_date,
                identifiers=patient.identifiers,
                gender=patient.gender,
            )
    return ChartIdentity()


def with_identity(document: SourceDocument, chart: ChartIdentity) -> SourceDocument:
    """The document with its verdict recorded."""
    readable = [page for page in document.pages if page.has_text]
    return document.model_copy(update={"identity": check_identity(readable, chart)})
