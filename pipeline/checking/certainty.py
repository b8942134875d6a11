"""Two ways a summary states more than its source, both hard failures of the checker.

**Certainty.** A source that qualifies a finding ("raises the possibility of a benign
neoplasm", "question neurogenic tumor", "rule out sepsis", "suspected fracture") has not made a
diagnosis; a summary that asserts the same finding as certain ("… is a benign neurogenic
tumor") fabricates one. A word is *hedged* in a text when it falls within the scope of a hedge
cue (as a negation falls within a negation cue's, ``pipeline.checking.checker``); the summary fails
when it asserts, unhedged, a content word that its evidence only ever states hedged.

**Disease class.** "Metastatic" where the source says "benign" is a different disease, not a
paraphrase: a word of one class (benign; malignant) where the evidence names only the other
class fails, whatever else the sentence gets right.

Pure functions over text; ``pipeline.checking.checker`` runs them with its other checks.
"""

from __future__ import annotations

import re

from pipeline.evidence.summary import CheckResult, check_result
from pipeline.text.words import WORD, content_word, stem

# Cues whose scope runs forward, to the end of the clause: "possible pneumonia", "rule out
# sepsis", "question neurogenic tumor", "concerning for malignancy".
_FORWARD_CUE = re.compile(
    r"\b(?:possible|possibly|possibility of|probable|probably|likely|unlikely|question(?:able)?"
    r"|suspect(?:ed)?|suspicious (?:for|of)|suspicion (?:for|of)|concern(?:ing)? for"
    r"|rule out|r/o|to exclude|cannot (?:be )?exclude[d]?|cannot rule out|consider"
    r"|differential(?: diagnosis)? (?:includes?|of)|may (?:be|have|represent)|might|could be"
    r"|versus|vs\.?|presumed|presumptive|equivocal|indeterminate|worrisome for)\b",
    re.IGNORECASE,
)
# Cues that qualify what comes just before them: "pathology is pending", "a tumor is questioned".
_BACKWARD_CUE = re.compile(
    r"\b(?:is |are |was |were )?(?:pending|awaited|questioned|suspected|not yet known|uncertain)\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;:!?()\n]|\b(?:but|however|and pathology|although|though)\b", re.I)
_SCOPE_WORDS = 8
_BACKWARD_WORDS = 3

# Disease classes that are different diseases, not wordings of one: a summary naming one where
# its evidence names only the other states a different diagnosis.
DISEASE_CLASSES: dict[str, frozenset[str]] = {
    "benign": frozenset({"benign", "noncancer", "non-cancerous", "noncancerous"}),
    "malignant": frozenset(
        {
            "malignant",
            "malignancy",
            "metastatic",
            "metastasis",
            "metastases",
            "metastasized",
            "cancer",
            "cancerous",
            "carcinoma",
            "sarcoma",
            "lymphoma",
            "neoplastic",
        }
    ),
}


def _clause_words(text: str, start: int, forward: bool, limit: int) -> list[str]:
    """Up to ``limit`` words from ``start`` in one direction, not past the clause's end."""
    if forward:
        end = _CLAUSE_END.search(text, start)
        words = WORD.findall(text[start : end.start() if end else len(text)])
        return words[:limit]
    begin = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    return WORD.findall(text[begin:start])[-limit:]


def hedged_stems(text: str) -> set[str]:
    """The stems of content words that ``text`` states within a hedge's scope."""
    hedged: set[str] = set()
    for cue in _FORWARD_CUE.finditer(text):
        words = _clause_words(text, cue.end(), forward=True, limit=_SCOPE_WORDS)
        hedged |= {stem(word) for word in words if content_word(word)}
    for cue in _BACKWARD_CUE.finditer(text):
        words = _clause_words(text, cue.start(), forward=False, limit=_BACKWARD_WORDS)
        hedged |= {stem(word) for word in words if content_word(word)}
    return hedged


def _stated(text: str) -> list[tuple[str, str]]:
    """(stem, word) of each content word of ``text``."""
    return [(stem(word), word) for word in WORD.findall(text) if content_word(word)]


def check_certainty(text: str, evidence_text: str) -> CheckResult:
    """Hard: a finding asserted as certain that the evidence states only as possible."""
    # Hedges never reach past a sentence (its end closes their clause): read each one once.
    hedged_in_evidence: set[str] = set()
    asserted_in_evidence: set[str] = set()
    for sentence in re.split(r"(?<=[.;!?])\s+|\n", evidence_text):
        hedged = hedged_stems(sentence)
        hedged_in_evidence |= hedged
        asserted_in_evidence |= {said for said, _ in _stated(sentence) if said not in hedged}
    hedged_in_text = hedged_stems(text)
    failing = [
        word
        for stem, word in _stated(text)
        if stem in hedged_in_evidence
        and stem not in asserted_in_evidence
        and stem not in hedged_in_text
    ]
    return check_result("certainty", failing, "stated as certain where the evidence only raises it")


def _classes(text: str) -> dict[str, list[str]]:
    words = [word.lower() for word in WORD.findall(text)]
    return {
        name: [word for word in words if word in members]
        for name, members in DISEASE_CLASSES.items()
    }


def check_disease_class(text: str, evidence_text: str) -> CheckResult:
    """Hard: a disease class (benign, malignant) the evidence does not name, where it names the
    other one."""
    said = _classes(text)
    known = _classes(evidence_text)
    failing = [
        word
        for name, words in said.items()
        if words and not known[name] and any(known[other] for other in known if other != name)
        for word in words
    ]
    return check_result("disease_class", failing, "a different disease class from the evidence's")
