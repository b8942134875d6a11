"""What a text asserts and what it denies, word by word (a NegEx-style scope).

A negation cue ("no", "denies", "without"…) reaches to the clause's end or a window of words; a
question's words take the polarity its answer gives them ("Any swelling? No." denies swelling).
The checker compares a sentence's polarities with its evidence's.
"""

from __future__ import annotations

import re

from pipeline.text.words import FUNCTION_WORDS, WORD, stem

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


def polarities(text: str) -> list[tuple[str, bool, str]]:
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
