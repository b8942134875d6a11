"""Whether a sentence states anything about the patient: a question, a fragment, a courtesy
("I'm sorry, I'm Dr. Thompson"), a request ("Tell me what happened."), an answer that only
says it does not know, or text about the conversation or the summary itself ("The
doctor-patient conversation is summarized as follows", "The doctor acknowledges the patient's
injury") makes no clinical claim. Such a sentence never reaches a draft; to the checker it is
unsupported (hard), since a summary line that says nothing is noise a physician must still read.
"""

from __future__ import annotations

import re

from pipeline.evidence.summary import CheckResult, check_result
from pipeline.text.words import FUNCTION_WORDS

_SPEAKER = re.compile(r"^\s*[A-Za-z_]+\s*:\s*")
_META = re.compile(
    r"\b(?:conversation|dialogue|summar(?:y|ize[ds]?|ised|ized)|transcript|as follows"
    r"|this (?:note|record|text)|doctor-patient relationship)\b",
    re.IGNORECASE,
)
# A courtesy says nothing of the patient: apologies, introductions, greetings, thanks, praise.
_COURTESY = re.compile(
    r"^(?:i'?m sorry|sorry|i'?m (?:dr\.?|doctor)\b|my name is|nice to meet|thank(?:s| you)"
    r"|hello|hi\b|good (?:morning|afternoon|evening)|wow|great|amazing|okay|ok\b|alright)"
    r"|\b(?:here to help|any questions you (?:may|might) have|not familiar with your name)\b",
    re.IGNORECASE,
)
# A request to the other party ("Tell me what happened.") asks; it states nothing.
_REQUEST = re.compile(r"^(?:tell me|let me|let's|can you|could you|would you|go ahead)\b", re.I)
# A question cut before its mark still opens as one ("How old are you now").
_INTERROGATIVE = re.compile(
    r"^(?:(?:how|what|when|where|why|which|who)\s+(?:is|are|do|does|did|have|has|can|could"
    r"|would|will|long|old|much|many|often|about)\b"
    r"|(?:do|does|did|are|is|have|has|can|could|would|will)\s+(?:you|your|he|she|they|it)\b)",
    re.IGNORECASE,
)
_NOT_KNOWN = re.compile(
    r"^(?:i (?:don'?t|do not|didn'?t|did not) know|i'?m not sure|not sure)\W*$", re.IGNORECASE
)
# A speech act of the conversation's parties ("the doctor acknowledges…", "the patient is happy
# to share…") reports the conversation, unless it carries what was said ("explains that…").
_SPEECH_ACT = re.compile(
    r"^(?:the |a )?(?:doctor|physician|provider|clinician|patient|guest family|family|they)\b"
    r"[\w\s',-]{0,40}?\b(?:acknowledg|shar(?:e|es|ing)\b|answer|respond|listen|thank"
    r"|apologi[sz]|introduc|greet|reassur|engag|is asked to)\w*\b(?!.*\bthat\b)",
    re.IGNORECASE,
)
_CLOSERS = "\"'”’)] "
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+")
_CONTRACTION = re.compile(r"'(?:m|s|re|ve|ll|d)$|n't$", re.IGNORECASE)


def _content(word: str) -> bool:
    """A word that says something: not a function word, even contracted ("I'm", "don't")."""
    return _CONTRACTION.sub("", word).lower() not in FUNCTION_WORDS


def claim_problem(sentence: str) -> str | None:
    """Why ``sentence`` states nothing about the patient, or None when it may."""
    said = _SPEAKER.sub("", sentence).strip().strip('"“')
    if said.rstrip(_CLOSERS).endswith("?") or _INTERROGATIVE.match(said):
        return "a question"
    if _META.search(said) or _SPEECH_ACT.search(said):
        return "about the conversation or the summary, not the patient"
    if _COURTESY.search(said):
        return "a courtesy"
    if _REQUEST.match(said):
        return "a request"
    if _NOT_KNOWN.match(said.rstrip(_CLOSERS)):
        return "says only that it is not known"
    if not any(_content(word) for word in _WORD.findall(said)):
        return "a fragment"  # "I'm", "No.", "Patient": nothing but function words
    return None


def check_claim(sentence: str) -> CheckResult:
    """Hard: the sentence makes no clinical claim."""
    problem = claim_problem(sentence)
    failing = [sentence.strip()] if problem else []
    return check_result("claim", failing, f"no clinical claim: {problem}")
