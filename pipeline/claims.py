"""Whether a sentence states anything about the patient: a question, a fragment, or text about
the conversation or the summary itself ("The doctor-patient conversation is summarized as
follows") makes no clinical claim. Such a sentence never reaches a draft; to the checker it is
unsupported (hard), since a summary line that says nothing is noise a physician must still read.
"""

from __future__ import annotations

import re

from pipeline.summary import CheckResult, check_result
from pipeline.words import FUNCTION_WORDS

_SPEAKER = re.compile(r"^\s*[A-Za-z_]+\s*:\s*")
_META = re.compile(
    r"\b(?:conversation|dialogue|summar(?:y|ize[ds]?|ised|ized)|transcript|as follows"
    r"|this (?:note|record|text)|doctor-patient relationship)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+")
_CONTRACTION = re.compile(r"'(?:m|s|re|ve|ll|d)$|n't$", re.IGNORECASE)


def _content(word: str) -> bool:
    """A word that says something: not a function word, even contracted ("I'm", "don't")."""
    return _CONTRACTION.sub("", word).lower() not in FUNCTION_WORDS


def claim_problem(sentence: str) -> str | None:
    """Why ``sentence`` states nothing about the patient, or None when it may."""
    said = _SPEAKER.sub("", sentence).strip()
    if said.endswith("?"):
        return "a question"
    if _META.search(said):
        return "about the conversation or the summary, not the patient"
    if not any(_content(word) for word in _WORD.findall(said)):
        return "a fragment"  # "I'm", "No.", "Patient": nothing but function words
    return None


def check_claim(sentence: str) -> CheckResult:
    """Hard: the sentence makes no clinical claim."""
    problem = claim_problem(sentence)
    failing = [sentence.strip()] if problem else []
    return check_result("claim", failing, f"no clinical claim: {problem}")
