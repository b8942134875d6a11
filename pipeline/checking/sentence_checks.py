"""Each deterministic check of one sentence against its evidence: numbers, dates, drugs,
demographics, negation and denials, content words, citations. Each returns a CheckResult; the
checker (``pipeline.checking.checker``) runs them together and decides nothing itself.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from functools import lru_cache
from importlib import resources

from pipeline.checking.evidence_text import Evidence
from pipeline.checking.mentions import NumberMention, find_dates, find_numbers
from pipeline.checking.polarity import polarities
from pipeline.evidence.summary import CheckResult, check_result
from pipeline.text.words import WORD, content_word, stem

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
_DRUG_SUFFIXES = re.compile(
    r"\b[a-z]+(?:pril|olol|sartan|statin|dipine|azole|prazole|oxacin|cycline|mycin|cillin|"
    r"cef[a-z]+|parin|gliptin|gliflozin|lukast|tidine|afil|triptan|barbital|zepam|zolam|"
    r"setron|tinib|mab|vir)\b",
    re.I,
)
_ALLERGEN = re.compile(r"\ballerg(?:y|ies|ic)\s+to\s+(?P<what>[a-z][a-z-]+)", re.I)


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


def check_drugs(text: str, evidence: Evidence, absence_said: bool = False) -> CheckResult:
    """Drugs the sentence names that the evidence never does. With ``absence_said`` (a sentence
    a rule wrote from the record, which says "No aspirin at discharge" after looking for it), a
    drug named only as absent is no claim that it was given, and passes; a model's "no aspirin"
    is a claim the citations cannot show, and is checked as any other mention."""
    known = {word.lower() for word in WORD.findall(evidence.joined)}
    if absence_said:
        known |= _only_denied(text)
    failing = [word for word in drug_mentions(text) if word.lower() not in known]
    return check_result("drugs", failing, "drugs or allergens not in the evidence")


def _only_denied(text: str) -> set[str]:
    """The words a text only ever denies ("No aspirin at discharge"), never asserts."""
    said = polarities(text)
    denied = {word.lower() for _, negated, word in said if negated}
    return denied - {word.lower() for _, negated, word in said if not negated}


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
    for word_stem, negated, _ in polarities(evidence.joined):
        seen.setdefault(word_stem, set()).add(negated)
    return [
        word
        for word_stem, negated, word in polarities(text)
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


def check_citations(citations: Sequence[str], known: Container[str]) -> CheckResult:
    missing = [citation for citation in citations if citation not in known]
    if not citations:
        return CheckResult(check="citations", passed=False, detail="the sentence cites nothing")
    return check_result("citations", missing, "citations that do not resolve")
