"""The fact checker: deterministic checks of each summary sentence against the evidence.

Used by every summarizer backend. For a sentence it checks that

- ``numbers``: every number (with its unit, if any) appears in the evidence, compared after
  normalising ("10mg" = "10 mg" = "0.01 g");
- ``dates``: every date appears in the evidence ("2024-01-03" = "Jan 3, 2024" = "01/03/2024");
- ``drugs``: every drug or allergen named exists in the evidence;
- ``negation``: a finding the sentence asserts is not only ever denied in the evidence ("fever"
  where the evidence says "denies fever"; in a dialogue, a question answered "no" denies);
- ``denials`` (soft): the reverse, a word the sentence denies that the evidence only asserts.
  Measured on MTS-Dialog, most such flags fell on words a negation's scope happens to reach
  ("denies current alcohol use" against "I use…"), so it marks weak grounding, not unsupported;
- ``demographics``: an age or sex the sentence states is in the evidence;
- ``citations``: every cited fact exists (structured mode);
- ``terms`` (free text): every content word is in the retrieved evidence (stemmed). This one is
  **soft**: a faithful paraphrase uses words of its own ("prescribed" for "discharge medications
  include"), so a failure marks the sentence weakly grounded for the physician and never makes it
  unsupported; the hard checks above do (``pipeline.evidence.summary.Severity``).

Numbers and dates are checked against the sentence's own evidence (its citations, or the source
sentences retrieved for it); drugs and demographics against all the evidence.

The MA-RAG metrics: numeric precision is supported numeric mentions (numbers and dates) over all
numeric mentions; the numeric hallucination rate is the share of sentences holding a numeric
mention that hold at least one unsupported one. With no numeric mention at all they are 1 and 0.
"""

from __future__ import annotations

import calendar
import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

from pipeline.checking.certainty import check_certainty, check_disease_class
from pipeline.checking.claims import check_claim
from pipeline.clinical.medications import normalise_quantity
from pipeline.clinical.record_conflicts import check_record
from pipeline.evidence.model import EvidenceState, Fact
from pipeline.evidence.summary import CheckResult, Sentence, Verdict, check_result, hard_verdict
from pipeline.text.words import FUNCTION_WORDS, WORD, content_word, stem

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
_SPELLED = re.compile(
    rf"\b(?P<tens>{'|'.join(_TENS_WORDS)})(?:[- ](?P<unit>{'|'.join(_UNITS_WORDS[1:10])}))?\b"
    rf"|\b(?P<word>{'|'.join([*_UNITS_WORDS, *_ORDINALS])})\b",
    re.I,
)
_SEX_CLUES = {
    "he": "male", "him": "male", "his": "male", "mr": "male", "sir": "male",
    "she": "female", "her": "female", "hers": "female", "mrs": "female", "ms": "female",
    "miss": "female", "ma'am": "female",
}  # fmt: skip
_AGE = re.compile(
    r"\b(?P<age>\d{1,3})[- ](?:year|yr)s?[- ]old\b|\baged?\s+(?P<aged>\d{1,3})\b", re.I
)
_SEX_WORDS = {
    "male": "male",
    "man": "male",
    "boy": "male",
    "gentleman": "male",
    "men": "male",
    "female": "female",
    "woman": "female",
    "girl": "female",
    "lady": "female",
    "women": "female",
}
_NEGATION_CUE = re.compile(
    r"\b(no|not|denies|denied|deny|denying|without|negative for|absence of|free of|"
    r"ruled out|never|cannot|unable to|difficulty|trouble|[a-z]+n't)(?![\w'])",
    re.I,
)
_SCOPE_END = re.compile(
    r"[.;:!?]|\b(?:but|however|except|which|just|although|though|apart from|other than)\b"
    r"|\band (?:that|he|she|they|it|i)\b",
    re.I,
)
# A negation reaches this many words past its cue (as NegEx's window does), enough for a list
# ("negative for coronary heart disease, hypertension, diabetes, or kidney disease").
_SCOPE_WORDS = 10
# "No, I'm single.": a "no" that answers a question negates nothing after it.
_ANSWER_PARTICLE = re.compile(r"\s*[,.!]")
# In a dialogue a finding is often only named in a question, and the answer decides it.
_SPEAKER = re.compile(r"^\s*[A-Za-z_]+\s*:\s*")
_NO_ANSWER = re.compile(
    r"^(?:no|nope|nah|not really|never|negative|none|i don't|i do not|i haven't)\b", re.I
)
_YES_ANSWER = re.compile(r"^(?:yes|yeah|yep|yup|i do|i have|sometimes|a little|correct)\b", re.I)
_DRUG_SUFFIXES = re.compile(
    r"\b[a-z]+(?:pril|olol|sartan|statin|dipine|azole|prazole|oxacin|cycline|mycin|cillin|"
    r"cef[a-z]+|parin|gliptin|gliflozin|lukast|tidine|afil|triptan|barbital|zepam|zolam|"
    r"setron|tinib|mab|vir)\b",
    re.I,
)
_ALLERGEN = re.compile(r"\ballerg(?:y|ies|ic)\s+to\s+(?P<what>[a-z][a-z-]+)", re.I)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SentenceReport(_Model):
    text: str
    verdict: Verdict
    # A soft check failed: words the evidence lacks, for the physician to look at.
    weakly_grounded: bool
    spans: list[str]
    checks: list[CheckResult]


class VerificationReport(_Model):
    sentences: list[SentenceReport]
    numeric_precision: float
    hallucination_rate: float


@lru_cache(maxsize=1)
def drug_lexicon() -> frozenset[str]:
    text = (
        resources.files("pipeline.checking")
        .joinpath("lexicon/drugs.txt")
        .read_text(encoding="utf-8")
    )
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
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


def find_numbers(text: str) -> list[NumberMention]:
    """Numbers outside dates and list numbering, with their unit or what they count."""
    dates = find_dates(text)
    mentions = []
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end, _ in dates):
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


def _clause_polarities(clause: str) -> list[tuple[str, bool, str]]:
    """(stem, negated, word) for each content word of one clause."""
    cue = _NEGATION_CUE.search(clause)
    while cue and cue.group(0).lower() == "no" and _ANSWER_PARTICLE.match(clause, cue.end()):
        cue = _NEGATION_CUE.search(clause, cue.end())
    scope_start = scope_end = len(clause)
    if cue:
        scope_start = cue.end()
        end = _SCOPE_END.search(clause, cue.end())
        scope_end = end.start() if end else len(clause)
        # A list ("denies fever, chills, sweats, …") is denied to its end; prose to the window.
        if "," not in clause[cue.end() : scope_end]:
            window = list(WORD.finditer(clause, cue.end()))[:_SCOPE_WORDS]
            if window:
                scope_end = min(scope_end, window[-1].end())
    out = []
    for match in WORD.finditer(clause):
        word = match.group(0)
        if word.lower() in FUNCTION_WORDS or len(word) < 3 or _NEGATION_CUE.fullmatch(word):
            continue
        out.append((stem(word), scope_start <= match.start() < scope_end, word))
    return out


def _polarities(text: str) -> list[tuple[str, bool, str]]:
    """(stem, negated, word) for each content word of ``text``. A question's words take the
    polarity its answer gives them ("Any swelling? No." denies swelling); with no clear answer,
    both (a question asserts nothing)."""
    clauses = [
        _SPEAKER.sub("", clause)
        for clause in re.split(r"(?<=[.;!?])\s+|\n+", text)
        if clause.strip()
    ]
    out = []
    for index, clause in enumerate(clauses):
        words = _clause_polarities(clause)
        if not clause.rstrip().endswith("?"):
            out += words
            continue
        answer = clauses[index + 1] if index + 1 < len(clauses) else ""
        if _NO_ANSWER.match(answer):
            out += [(word_stem, True, word) for word_stem, _, word in words]
        elif _YES_ANSWER.match(answer):
            out += [(word_stem, False, word) for word_stem, _, word in words]
        else:
            out += [
                (word_stem, negated, word)
                for word_stem, _, word in words
                for negated in (True, False)
            ]
    return out


@dataclass(slots=True)
class Evidence:
    """What a sentence may be checked against: texts, and the values and dates they hold."""

    texts: list[str] = field(default_factory=list)
    values: set[str] = field(default_factory=set)
    quantities: set[str] = field(default_factory=set)
    dates: set[date] = field(default_factory=set)
    # For each value, what it counts where the evidence states it ("" where bare).
    kinds: dict[str, set[str]] = field(default_factory=dict)

    def _add_number(self, value: str, kind: str | None = None) -> None:
        self.values.add(value)
        self.kinds.setdefault(value, set()).add(kind or "")

    def add_text(self, text: str) -> None:
        self.texts.append(text)
        for mention in find_numbers(text):
            self._add_number(mention.value, mention.kind)
            if mention.quantity:
                self.quantities.add(mention.quantity)
        for value in spelled_numbers(text):
            self._add_number(value)
        self.dates |= {found for _, _, found in find_dates(text)} | spoken_dates(text)

    def add_value(self, value: object) -> None:
        if isinstance(value, datetime):
            self.dates.add(value.date())
        elif isinstance(value, date):
            self.dates.add(value)
        elif isinstance(value, bool):
            return
        elif isinstance(value, (int, Decimal, float)):
            self._add_number(normal_number(str(value)))
        elif isinstance(value, str):
            self.add_text(value)

    @property
    def joined(self) -> str:
        return "\n".join(self.texts)

    @property
    def stems(self) -> set[str]:
        return {stem(word) for word in WORD.findall(self.joined)}

    @classmethod
    def of_text(cls, *texts: str) -> Evidence:
        evidence = cls()
        for text in texts:
            evidence.add_text(text)
        return evidence

    @classmethod
    def of_facts(cls, facts: Iterable[Fact]) -> Evidence:
        evidence = cls()
        for fact in facts:
            _walk(fact.attributes.model_dump(), evidence)
            for ref in fact.sources:
                if ref.quote:
                    evidence.add_text(ref.quote)
        return evidence


def _walk(value: object, evidence: Evidence) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in {"category", "system", "phase_rule"}:
                _walk(item, evidence)
    elif isinstance(value, list):
        for item in value:
            _walk(item, evidence)
    elif value is not None:
        evidence.add_value(value)


def _number_supported(mention: NumberMention, evidence: Evidence) -> bool:
    """The value with what it counts: "10 days" does not support "10-year-old", nor "10 mg"
    "10 units"; a bare value in the evidence supports any count of it."""
    if mention.quantity is not None and mention.quantity in evidence.quantities:
        return True
    kinds = evidence.kinds.get(mention.value, set())
    return bool(kinds) and (mention.kind is None or "" in kinds or mention.kind in kinds)


def check_numbers(text: str, evidence: Evidence) -> CheckResult:
    failing = [m.text for m in find_numbers(text) if not _number_supported(m, evidence)]
    return check_result(
        "numbers", failing, "numbers not found in the evidence, or counting another thing"
    )


def check_dates(text: str, evidence: Evidence) -> CheckResult:
    failing = [
        text[start:end] for start, end, found in find_dates(text) if found not in evidence.dates
    ]
    return check_result("dates", failing, "dates not found in the evidence")


def drug_mentions(text: str) -> list[str]:
    lexicon = drug_lexicon()
    words = [word for word in WORD.findall(text) if word.lower() in lexicon]
    words += [match.group(0) for match in _DRUG_SUFFIXES.finditer(text)]
    words += [match.group("what") for match in _ALLERGEN.finditer(text)]
    return list(dict.fromkeys(words))


def check_drugs(text: str, evidence: Evidence) -> CheckResult:
    known = {word.lower() for word in WORD.findall(evidence.joined)}
    failing = [word for word in drug_mentions(text) if word.lower() not in known]
    return check_result("drugs", failing, "drugs or allergens not in the evidence")


def check_demographics(text: str, evidence: Evidence) -> CheckResult:
    failing = []
    for match in _AGE.finditer(text):
        age = match.group("age") or match.group("aged")
        if age not in evidence.values:
            failing.append(match.group(0))
    # The evidence tells sex by words, and by pronouns and forms of address too ("she", "Mr.").
    clues = _SEX_WORDS | _SEX_CLUES
    evidence_sexes = {
        clues[word.lower()] for word in WORD.findall(evidence.joined) if word.lower() in clues
    }
    for word in WORD.findall(text):
        sex = _SEX_WORDS.get(word.lower())
        if sex is not None and sex not in evidence_sexes:
            failing.append(word)
    return check_result("demographics", failing, "age or sex not stated in the evidence")


def _polarity_mismatches(text: str, evidence: Evidence, negated_in_text: bool) -> list[str]:
    """Words ``text`` states with this polarity that the evidence only ever states the other way."""
    seen: dict[str, set[bool]] = {}
    for word_stem, negated, _ in _polarities(evidence.joined):
        seen.setdefault(word_stem, set()).add(negated)
    return [
        word
        for word_stem, negated, word in _polarities(text)
        if negated is negated_in_text and word_stem in seen and negated not in seen[word_stem]
    ]


def check_negation(text: str, evidence: Evidence) -> CheckResult:
    failing = _polarity_mismatches(text, evidence, negated_in_text=False)
    return check_result("negation", failing, "asserted where the evidence denies it")


def check_denials(text: str, evidence: Evidence) -> CheckResult:
    failing = _polarity_mismatches(text, evidence, negated_in_text=True)
    return check_result("denials", failing, "denied where the evidence states it")


def check_terms(text: str, evidence: Evidence) -> CheckResult:
    """Runs of content words that the evidence does not contain (stemmed)."""
    stems = evidence.stems
    failing: list[str] = []
    run: list[str] = []
    for word in WORD.findall(text):
        if content_word(word) and stem(word) not in stems:
            run.append(word)
        elif run:
            failing.append(" ".join(run))
            run = []
    if run:
        failing.append(" ".join(run))
    return check_result("terms", failing, "words the evidence does not contain")


def check_citations(citations: Sequence[str], state: EvidenceState) -> CheckResult:
    known = {fact.id for fact in state.all_facts()}
    missing = [citation for citation in citations if citation not in known]
    if not citations:
        return CheckResult(check="citations", passed=False, detail="the sentence cites nothing")
    return check_result("citations", missing, "citations that do not resolve")


def check_cited_sentence(
    text: str,
    citations: Sequence[str],
    state: EvidenceState,
    *,
    free_text: bool = False,
    against_record: bool = True,
) -> list[CheckResult]:
    """All checks of one summary sentence against its cited facts and the whole state; with
    ``against_record``, also against what the structured record says (a Needs review line,
    which quotes a conflict in order to report it, is not)."""
    facts = {fact.id: fact for fact in state.all_facts()}
    cited = Evidence.of_facts(facts[c] for c in citations if c in facts)
    whole = Evidence.of_facts(facts.values())
    checks = [
        check_numbers(text, cited),
        check_dates(text, cited),
        check_drugs(text, whole),
        check_negation(text, cited),
        check_denials(text, cited),
        check_demographics(text, whole),
        check_certainty(text, cited.joined),
        check_disease_class(text, cited.joined),
        check_citations(citations, state),
    ]
    if against_record:
        checks.append(check_record(text, state))
    if free_text:
        checks += [check_terms(text, cited), check_claim(text)]
    return checks


def check_free_sentence(text: str, retrieved: Evidence, whole: Evidence) -> list[CheckResult]:
    """Checks of a sentence with no citations: the content words against what was retrieved for
    it; the rest against the whole source (a dialogue's answer may be far from the question)."""
    return [
        check_numbers(text, whole),
        check_dates(text, whole),
        check_drugs(text, whole),
        check_negation(text, whole),
        check_denials(text, whole),
        check_demographics(text, whole),
        check_certainty(text, whole.joined),
        check_disease_class(text, whole.joined),
        check_claim(text),
        check_terms(text, retrieved),
    ]


def numeric_metrics(
    texts: Sequence[str], reports: Sequence[Sequence[CheckResult]]
) -> tuple[float, float]:
    """(numeric precision, numeric hallucination rate) over sentences and their checks."""
    mentions = unsupported = numeric_sentences = hallucinating = 0
    for text, checks in zip(texts, reports, strict=True):
        count = len(find_numbers(text)) + len(find_dates(text))
        if not count:
            continue
        failed = sum(len(check.spans) for check in checks if check.check in {"numbers", "dates"})
        mentions += count
        unsupported += min(failed, count)
        numeric_sentences += 1
        hallucinating += failed > 0
    precision = 1.0 if not mentions else (mentions - unsupported) / mentions
    rate = 0.0 if not numeric_sentences else hallucinating / numeric_sentences
    return precision, rate


def report_of(texts: Sequence[str], checks: Sequence[list[CheckResult]]) -> VerificationReport:
    sentences = [
        SentenceReport(
            text=text,
            verdict=hard_verdict(sentence_checks),
            weakly_grounded=any(not c.passed for c in sentence_checks if c.severity == "soft"),
            spans=list(dict.fromkeys(s for c in sentence_checks for s in c.spans)),
            checks=sentence_checks,
        )
        for text, sentence_checks in zip(texts, checks, strict=True)
    ]
    precision, rate = numeric_metrics(texts, checks)
    return VerificationReport(
        sentences=sentences, numeric_precision=precision, hallucination_rate=rate
    )


def check_summary_sentences(sentences: Sequence[Sentence], state: EvidenceState) -> list[Sentence]:
    """The sentences with their checks filled in (structured mode)."""
    return [
        sentence.model_copy(
            update={
                "checks": check_cited_sentence(
                    sentence.text,
                    sentence.citations,
                    state,
                    against_record=sentence.section != "needs_review",
                )
            }
        )
        for sentence in sentences
    ]
