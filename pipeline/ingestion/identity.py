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

from datetime import date

from pydantic import BaseModel, Field

from pipeline.evidence.model import (
    Fact,
    FoundIdentifier,
    IdentityCheck,
    Page,
    PatientInfoAttributes,
    PersonName,
    SourceDocument,
)
from pipeline.ingestion.page_identifiers import digits, find_identifiers, name_tokens

# Name, birth date and record identifier count towards the two; sex only ever contradicts.
COUNTED_KINDS = frozenset({"name", "birth_date", "identifier"})


class ChartIdentity(BaseModel):
    """Who the chart is about: every name, the birth date, every identifier, the gender."""

    names: list[PersonName] = Field(default_factory=list)
    birth_date: date | None = None
    identifiers: list[str] = Field(default_factory=list)
    gender: str | None = None


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
        givens = [word for given in name.given for word in name_tokens(given)]
        family = name_tokens(name.family or "")
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
        value = digits(found.values[0]).upper()
        return any(digits(known).upper() == value for known in chart.identifiers)
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
    return _name_agrees(name_tokens(text), chart)


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
