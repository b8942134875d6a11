"""What a clinical term says of itself, read from its words: a past event ("History of X"), a
status or administrative term that is no diagnosis on its own ("Awaiting X", "X requested", a
transfer, an abnormal test finding), a request for elective care, and the words that say what
a term is about, which tie two terms together (``pipeline.clinical.diagnoses`` lists the
diagnoses by them).
"""

from __future__ import annotations

import re

from pipeline.text.rendering import plain_term

HISTORY_OF = re.compile(r"^(?:history of|h/o)\b", re.IGNORECASE)
# SNOMED CT's past-history situations, the obstetric ones too ("Past pregnancy history of
# miscarriage (situation)"): a past event, not a problem under care.
PAST_HISTORY = re.compile(r"^(?:history of|h/o|past (?:\w+ )?history of)\b", re.IGNORECASE)
# A status or administrative term says where the patient stands or what was arranged, not what
# is wrong: "History of X", "Awaiting X", "Status post X", "X requested", a transfer or an
# admission. So does an abnormal test finding ("Abnormal findings diagnostic imaging heart+
# coronary circulat"): what a test showed, not the disease (ICD-10-CM Official Guidelines,
# section II.A: a sign or abnormal finding is not the principal diagnosis when a related
# definitive diagnosis is established). None is the principal diagnosis on its own (the summary
# then names the clinical problem when the record has one, or says that it is not documented,
# and flags it).
STATUS_TERM = re.compile(
    r"^(?:history of|h/o|awaiting|status post|s/p)\b|\brequested\b|\btransfer\b|\badmission\b"
    r"|^abnormal (?:\w+ )?(?:findings?|results?)\b",
    re.IGNORECASE,
)
# Words that say which test an abnormal finding came from, not what it is about.
_TEST_STEMS = frozenset({"diagno", "imagin", "examin", "studie", "functi", "specim", "labora"})
# A request for care ("Sterilization requested") as a stay's reason: an elective admission, whose
# reason is the care asked for rather than a disease.
REQUEST_TERM = re.compile(r"\brequested\b", re.IGNORECASE)


def elective_care(request: str) -> str:
    """The care a request asks for, named as the elective admission it is ("Sterilization
    requested": "Elective sterilization"): the clinical problem the issue's readers write in the
    diagnosis, where the request itself reads as an administrative code."""
    care = " ".join(REQUEST_TERM.sub("", plain_term(request)).split())
    return f"Elective {care[:1].lower()}{care[1:]}" if care else plain_term(request)


# Words too general to tie two clinical terms together.
_GENERIC = frozenset(
    "acute chronic disorder finding situation procedure history of the and with without due "
    "primary secondary unspecified left right".split()
)


def topic_stems(term: str) -> set[str]:
    """The words of a clinical term that say what it is about, cut to a stem of six letters
    ("appendectomy" and "appendicitis" stay apart; "grafting" and "graft" meet)."""
    words = re.findall(r"[a-z]+", plain_term(term).lower())
    return {word[:6] for word in words if len(word) > 3 and word not in _GENERIC}


def history_topic(display: str) -> set[str]:
    """What a "History of X" is about (the topic stems of X); empty for any other term."""
    said = plain_term(display)
    return topic_stems(HISTORY_OF.sub("", said)) if HISTORY_OF.match(said) else set()


def status_subject(term: str) -> set[str]:
    """What a status term or an abnormal finding is about ("Awaiting transplantation of kidney":
    the kidney's transplantation; "Abnormal findings diagnostic imaging heart+coronary circulat":
    the heart and coronary circulation), to find the problem it names."""
    return topic_stems(STATUS_TERM.sub("", plain_term(term))) - _TEST_STEMS
