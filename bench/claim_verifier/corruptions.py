"""Meaning-level corruptions of a supported sentence, each making a pair the verifier must not
call entailed. Each takes the sentence, its evidence and a random source, and returns the
corrupted sentence, or None where the sentence offers nothing to corrupt that way.

``CONTRADICTING`` corruptions make a sentence the evidence contradicts (a negation, a number, a
side, a sex, a severity, a time flipped); ``UNSUPPORTING`` ones make a sentence the evidence
does not support (an invented drug, condition, event or relative's history; a claim moved to
another person; a vague generalisation). None of them knows any validation sentence.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from pipeline.checking.checker import drug_lexicon

Corruption = Callable[[str, str, random.Random], str | None]

CONDITIONS = (
    "hypertension", "diabetes", "asthma", "COPD", "heart failure", "atrial fibrillation",
    "chronic kidney disease", "hypothyroidism", "depression", "anxiety", "migraine",
    "osteoarthritis", "rheumatoid arthritis", "gout", "pneumonia", "a urinary tract infection",
    "a stroke", "a myocardial infarction", "colon cancer", "breast cancer", "epilepsy",
    "sleep apnea", "cirrhosis", "pancreatitis", "a deep vein thrombosis", "anemia", "psoriasis",
    "Crohn's disease", "glaucoma", "lupus", "a pulmonary embolism", "sepsis", "a seizure",
)  # fmt: skip
RELATIVES = ("mother", "father", "sister", "brother", "grandmother", "son", "daughter", "uncle")
INVENTED_EVENTS = (
    "was admitted to the intensive care unit",
    "underwent emergency surgery",
    "was intubated",
    "had a fall at home",
    "was started on dialysis",
    "received a blood transfusion",
    "was seen in the emergency department last week",
    "had a cardiac arrest",
    "was treated with intravenous antibiotics",
    "lost consciousness",
)
GENERALISATIONS = (
    "This is a medical emergency.",
    "The patient has a new medical condition.",
    "The patient has a chronic condition that requires lifelong treatment.",
    "The condition is life-threatening.",
    "The patient's condition is serious and getting worse.",
    "The patient has a history of multiple hospitalizations.",
    "The patient is on long-term medication for this condition.",
    "The doctor suspects a serious underlying disease.",
)
_OPPOSITES = {
    "left": "right", "right": "left", "mild": "severe", "severe": "mild",
    "improved": "worsened", "worsened": "improved", "increased": "decreased",
    "decreased": "increased", "better": "worse", "worse": "better", "high": "low", "low": "high",
    "positive": "negative", "negative": "positive", "normal": "abnormal", "abnormal": "normal",
    "acute": "chronic", "chronic": "acute", "daily": "weekly", "weekly": "daily",
    "before": "after", "after": "before", "upper": "lower", "lower": "upper",
}  # fmt: skip
_SEXES = {
    "he": "she", "she": "he", "his": "her", "her": "his", "him": "her", "male": "female",
    "female": "male", "man": "woman", "woman": "man", "mr": "mrs", "mrs": "mr",
    "boy": "girl", "girl": "boy",
}  # fmt: skip
_TIMES = {
    "days": "years", "day": "year", "weeks": "months", "week": "month", "months": "weeks",
    "month": "week", "years": "days", "year": "day", "hours": "weeks", "yesterday": "last year",
    "today": "last month",
}  # fmt: skip
_WORD_NUMBERS = ("one two three four five six seven eight nine ten eleven twelve").split()
_NEGATED = re.compile(
    r"\b(?:denies|denied|does not|doesn't|did not|didn't|is not|isn't|was not|wasn't|no|not"
    r"|never|without|negative for)\b",
    re.I,
)
_ASSERTING_VERBS = (
    (r"\bhas\b", "does not have"),
    (r"\bhad\b", "did not have"),
    (r"\bis\b", "is not"),
    (r"\bwas\b", "was not"),
    (r"\breports\b", "denies"),
    (r"\breported\b", "denied"),
    (r"\bcomplains of\b", "denies"),
    (r"\btakes\b", "does not take"),
    (r"\buses\b", "does not use"),
)
_UNNEGATE = (
    (r"\bdenies\b", "reports"),
    (r"\bdenied\b", "reported"),
    (r"\bdoes not have\b", "has"),
    (r"\bdid not have\b", "had"),
    (r"\b(is|was) not\b", r"\1"),
    (r"\b(does|did) not\b", r"\1"),
    (r"\bno\s+", ""),
    (r"\bnegative for\b", "positive for"),
    (r"\bnever\b", "often"),
)


def _present(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.I) is not None


def _swap_word(sentence: str, table: dict[str, str], rng: random.Random) -> str | None:
    words = [m for m in re.finditer(r"[A-Za-z]+", sentence) if m.group(0).lower() in table]
    if not words:
        return None
    match = rng.choice(words)
    swapped = table[match.group(0).lower()]
    if match.group(0)[0].isupper():
        swapped = swapped.capitalize()
    return sentence[: match.start()] + swapped + sentence[match.end() :]


def flip_negation(sentence: str, evidence: str, rng: random.Random) -> str | None:
    if _NEGATED.search(sentence):
        for pattern, replacement in _UNNEGATE:
            changed = re.sub(pattern, replacement, sentence, count=1, flags=re.I)
            if changed != sentence:
                return changed
        return None
    for pattern, replacement in _ASSERTING_VERBS:
        changed = re.sub(pattern, replacement, sentence, count=1, flags=re.I)
        if changed != sentence:
            return changed
    return None


def change_number(sentence: str, evidence: str, rng: random.Random) -> str | None:
    digits = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])", sentence))
    if digits:
        match = rng.choice(digits)
        value = float(match.group(0))
        new = value + rng.choice((1, 2, 5, 10, 20)) * rng.choice((1, -1))
        if new <= 0 or new == value:
            new = value * 3 + 1
        text = f"{new:g}" if "." in match.group(0) else str(int(new))
        return sentence[: match.start()] + text + sentence[match.end() :]
    words = [
        m for m in re.finditer(r"[a-z]+", sentence, re.I) if m.group(0).lower() in _WORD_NUMBERS
    ]
    if not words:
        return None
    match = rng.choice(words)
    other = rng.choice([n for n in _WORD_NUMBERS if n != match.group(0).lower()])
    return sentence[: match.start()] + other + sentence[match.end() :]


def flip_opposite(sentence: str, evidence: str, rng: random.Random) -> str | None:
    return _swap_word(sentence, _OPPOSITES, rng)


def flip_sex(sentence: str, evidence: str, rng: random.Random) -> str | None:
    return _swap_word(sentence, _SEXES, rng)


def shift_time(sentence: str, evidence: str, rng: random.Random) -> str | None:
    return _swap_word(sentence, _TIMES, rng)


def swap_drug(sentence: str, evidence: str, rng: random.Random) -> str | None:
    lexicon = sorted(drug_lexicon())
    named = [m for m in re.finditer(r"[A-Za-z]+", sentence) if m.group(0).lower() in drug_lexicon()]
    if not named:
        return None
    match = rng.choice(named)
    for _ in range(20):
        other = rng.choice(lexicon)
        if len(other) > 4 and not _present(other, evidence):
            return sentence[: match.start()] + other + sentence[match.end() :]
    return None


def swap_condition(sentence: str, evidence: str, rng: random.Random) -> str | None:
    named = [c for c in CONDITIONS if _present(c.removeprefix("a "), sentence)]
    if not named:
        return None
    old = rng.choice(named).removeprefix("a ")
    choices = [
        c.removeprefix("a ") for c in CONDITIONS if not _present(c.removeprefix("a "), evidence)
    ]
    new = rng.choice(choices)
    return re.sub(rf"\b{re.escape(old)}\b", new, sentence, count=1, flags=re.I)


def invent_event(sentence: str, evidence: str, rng: random.Random) -> str | None:
    event = rng.choice(
        [e for e in INVENTED_EVENTS if not _present(e.split()[-1], evidence)] or [None]
    )
    if event is None:
        return None
    subject = rng.choice(("The patient", "He", "She", "The patient recently"))
    if rng.random() < 0.5:
        return f"{sentence.rstrip('. ')} and {event}."
    return f"{subject} {event}."


def invent_history(sentence: str, evidence: str, rng: random.Random) -> str | None:
    relative = rng.choice(RELATIVES)
    condition = rng.choice([c for c in CONDITIONS if not _present(c.removeprefix("a "), evidence)])
    drug = rng.choice([d for d in sorted(drug_lexicon()) if len(d) > 5][:400])
    return rng.choice(
        (
            f"There is a family history of {condition} in the patient's {relative}.",
            f"The patient has a history of {condition}.",
            f"The patient's {relative} had {condition}.",
            f"The patient is taking {drug} for {condition}.",
            f"The patient was diagnosed with {condition} last year.",
        )
    )


def move_subject(sentence: str, evidence: str, rng: random.Random) -> str | None:
    relative = rng.choice(RELATIVES)
    patterns = (
        (r"\b[Tt]he patient\b", f"The patient's {relative}"),
        (r"^(?:He|She)\b", f"Her {relative}"),
        (rf"\b(?:his|her|the patient's) (?:{'|'.join(RELATIVES)})\b", "the patient"),
    )
    for pattern, replacement in patterns:
        changed = re.sub(pattern, replacement, sentence, count=1)
        if changed != sentence:
            return changed
    return None


def generalise(sentence: str, evidence: str, rng: random.Random) -> str | None:
    return rng.choice(GENERALISATIONS)


CONTRADICTING: tuple[Corruption, ...] = (
    flip_negation,
    change_number,
    flip_opposite,
    flip_sex,
    shift_time,
)
UNSUPPORTING: tuple[Corruption, ...] = (
    swap_drug,
    swap_condition,
    invent_event,
    invent_history,
    move_subject,
    generalise,
)
