"""Screening questionnaires that came out positive: a PHQ-9 of 16 the week before an
appendectomy is an open finding the discharge hands over, not a score to read past.

Screening scores are left out of Key results as noise (``minor_results``), and a questionnaire
has no laboratory reference range, so a positive one was never said: a reader found a PHQ-9 of
16 (moderately severe depression) recorded a week before admission, which nothing in the
record acted on, missing from the draft. From the shipped ``screening_scores`` table (each
instrument's LOINC code, what it screens for, the score from which it is positive, by sex where
the authors validated it so, and its severity bands): the latest score of each instrument, of
the stay or of the days before admission that the record's mapping reads, when it is positive.
A screen is a snapshot, so a later negative one of the same instrument clears it; it never
becomes a diagnosis, only a finding to assess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    CarePlanAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    attributes_as,
    aware,
)


@dataclass(frozen=True, slots=True)
class PositiveScreen:
    """A positive questionnaire score and how to say it."""

    fact: Fact
    instrument: str
    screens_for: str
    score: str
    band: str | None
    positive_at: int
    sex: str | None
    taken: datetime
    before_stay: bool
    # Words of a care plan that addresses what it screens for (a depression care plan).
    addressed_by: tuple[str, ...]
    # What to ask before the patient leaves when it is handed over (thoughts of self-harm).
    ask_before_discharge: str | None = None


def is_screening_score(result: LabResultAttributes) -> bool:
    """A questionnaire's total score (the FHIR observation category ``survey``)."""
    return "survey" in (result.observation_category or "")


def _latest_by_instrument(
    state: EvidenceState, instruments: dict[str, Any]
) -> dict[str, tuple[datetime, Fact]]:
    """Each instrument's latest scored fact, with when it was taken."""
    latest: dict[str, tuple[datetime, Fact]] = {}
    for fact in state.facts["lab_result"]:
        result = attributes_as(fact, LabResultAttributes)
        code = result.code.code if result.code else None
        if code is None or code not in instruments or result.value is None:
            continue
        if result.effective is None:
            continue
        taken = aware(result.effective)
        if code not in latest or latest[code][0] < taken:
            latest[code] = (taken, fact)
    return latest


def _named(short: str, recorded: str) -> str:
    """The instrument's short name where the record's name holds it ("Patient Health
    Questionnaire 9 item (PHQ-9) total score": PHQ-9), else the record's own name: a short name
    the record never wrote would cite a number ("9") its evidence lacks."""
    return short if short.lower() in recorded.lower() else recorded


def _cut_off(rule: dict[str, Any], gender: str | None) -> int:
    """The score from which the instrument is positive, the patient's sex's where it differs."""
    return int(rule.get(gender or "", rule["positive_at"]))


def _score(result: LabResultAttributes) -> str:
    assert result.value is not None
    return result.shown_value or f"{result.value.normalize():f}"


def band_reached(score: float, bands: Sequence[Sequence[Any]]) -> str | None:
    """The last band whose lowest value ``score`` reaches (``bands``: [lowest, name], in order)."""
    reached = [str(name) for lowest, name in bands if score >= lowest]
    return reached[-1] if reached else None


def _answered_within(
    latest: dict[str, tuple[datetime, Fact]], code: str, whole: str | None
) -> bool:
    """Whether the instrument whose questions open ``whole`` (a PHQ-2 within a PHQ-9) was
    answered again within it, that day or later: the whole one speaks for both."""
    return (
        whole is not None and whole in latest and latest[whole][0].date() >= latest[code][0].date()
    )


def positive_screens(state: EvidenceState, screening: CodeTable) -> list[PositiveScreen]:
    """The latest score of each instrument of the ``screening_scores`` table, where positive,
    in the order the table lists the instruments."""
    instruments: dict[str, Any] = screening.extra["instruments"]
    gender = state.patient_gender()
    latest = _latest_by_instrument(state, instruments)
    positive = []
    for code, rule in instruments.items():
        if code not in latest or _answered_within(latest, code, rule.get("part_of")):
            continue
        taken, fact = latest[code]
        result = attributes_as(fact, LabResultAttributes)
        cut_off = _cut_off(rule, gender)
        if result.value is None or result.value < cut_off:
            continue
        positive.append(
            PositiveScreen(
                fact=fact,
                instrument=_named(rule["name"], result.name),
                screens_for=rule["screens_for"],
                score=_score(result),
                band=band_reached(float(result.value), rule["bands"]),
                positive_at=cut_off,
                sex=gender if gender in rule else None,
                taken=taken,
                before_stay=result.baseline,
                addressed_by=tuple(rule["care_plan_keywords"]),
                ask_before_discharge=rule.get("ask_before_discharge"),
            )
        )
    return positive


@dataclass(frozen=True, slots=True)
class NegativeScreen:
    """The latest score of an instrument, below its cut-off: a finding it screens for, recorded
    before it, was not found again when last asked about."""

    fact: Fact
    instrument: str
    score: str
    taken: datetime


def latest_negative(
    state: EvidenceState, screening: CodeTable, screens_for: str, after: datetime | None
) -> NegativeScreen | None:
    """The latest negative score, taken after ``after``, of an instrument that screens for
    ``screens_for`` (HARK for intimate partner violence); None when the latest is positive."""
    instruments: dict[str, Any] = screening.extra["instruments"]
    gender = state.patient_gender()
    latest = _latest_by_instrument(state, instruments)
    found: list[NegativeScreen] = []
    for code, (taken, fact) in latest.items():
        rule = instruments[code]
        result = attributes_as(fact, LabResultAttributes)
        negative = result.value is not None and result.value < _cut_off(rule, gender)
        if rule["screens_for"] != screens_for or not negative:
            continue
        if after is not None and taken <= aware(after):
            continue
        found.append(NegativeScreen(fact, _named(rule["name"], result.name), _score(result), taken))
    return max(found, key=lambda screen: screen.taken, default=None)


def unaddressed(state: EvidenceState, screens: Sequence[PositiveScreen]) -> list[PositiveScreen]:
    """The positive screens no care plan of the record addresses (a depression care plan
    answers a positive PHQ-9): the ones the discharge hands over."""
    plans = " ".join(
        " ".join([plan.title, *plan.addresses]).lower()
        for plan in (attributes_as(f, CarePlanAttributes) for f in state.facts["care_plan"])
    )
    return [screen for screen in screens if not any(word in plans for word in screen.addressed_by)]
