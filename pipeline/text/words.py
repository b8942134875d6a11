"""Words that carry no clinical content, shared by FOCUS (not salient) and the checker (not a
claim to check), and the one stemmer the checks compare words by. Kept apart from FOCUS so that
checking never loads torch."""

import re
import threading
from functools import lru_cache

from snowballstemmer import stemmer

# Porter's algorithm as Snowball publishes it (snowballstemmer, pure Python, imported in 10 ms
# where nltk's import pulls scipy in a second). A Snowball stemmer keeps its word in the object
# while it works, so one at a time: the checks run in a job worker's threads.
_STEMMER = stemmer("porter")
_ONE_AT_A_TIME = threading.Lock()
# A word as the checks read one: letters, with inner apostrophes and hyphens ("don't", "x-ray").
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A word's Porter stem, lower-cased: "tumors" and "tumor" are one word to a check."""
    with _ONE_AT_A_TIME:
        return str(_STEMMER.stemWord(word.lower()))


# Function words carry no content of their own and, like punctuation, act as attention sinks.
FUNCTION_WORDS = frozenset(
    """
    a about after all also am an and any are as at be been before being but by can could did do
    does doing for from had has have having he her here hers him his how i if in into is it its
    me my no nor not of off on once only or other our out over own so some such than that the
    their them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would yes you your um uh okay ok yeah
    patient doctor
    """.split()
)


# An abbreviation in capitals is a dense clinical term ("HIV", "MI", "CHF"), however short.
_ABBREVIATION = re.compile(r"[A-Z]{2,}s?")


def content_word(word: str) -> bool:
    """A word that can carry a claim: four letters or more, or an abbreviation in capitals, and
    not a function word."""
    if _ABBREVIATION.fullmatch(word):
        return word.lower() not in FUNCTION_WORDS
    return len(word) >= 4 and word.lower() not in FUNCTION_WORDS
