"""A drug past the age its label limits it to (prasugrel from 75 years), at discharge or within
the course it is given for, read from the ``indicated_therapy`` table's ``age_limits``: one rule
of what the discharge list should hold, kept apart from the rules that read conditions and
procedures."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from pipeline.clinical.risk_flags import drug_names, having, risk_flag
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    PatientInfoAttributes,
    ReviewFlag,
    attributes_as,
)


def age_limits(
    state: EvidenceState, going_home: Sequence[Fact], therapy: CodeTable
) -> list[ReviewFlag]:
    """A drug past its age limit at discharge, or one whose course (the table's days: 12 months
    of dual antiplatelet therapy after an acute coronary syndrome) runs past the birthday that
    reaches the limit: the patient takes it at that age too."""
    aged, stay = state.patient_age(), state.stay()
    if aged is None:
        return []
    patient, age = aged
    born = attributes_as(patient, PatientInfoAttributes).birth_date
    end = (stay.end or stay.start) if stay is not None else None
    flags = []
    for limit in therapy.extra["age_limits"]:
        given = having(going_home, [limit["ingredient"]])
        reached = _birthday(born, limit["age"]) if born else None
        if not given or not (age >= limit["age"] or _within(reached, end, limit["course_days"])):
            continue
        named = f"{drug_names(given)} at discharge for a {age}-year-old"
        # Said with the birth date, not the birthday worked out from it: every date and number
        # on the line is one the checker finds in the cited record.
        reason = (
            f"{named}: {limit['why']}"
            if age >= limit["age"]
            else f"{named} (born {born}), whose {limit['course']} runs {limit['why']}"
        )
        flags.append(risk_flag(f"age-{limit['ingredient']}", reason, [patient, *given]))
    return flags


def _birthday(born: date, years: int) -> date:
    """The day ``years`` after birth (a 29 February birth turns a year older on 1 March)."""
    try:
        return born.replace(year=born.year + years)
    except ValueError:
        return date(born.year + years, 3, 1)


def _within(day: date | None, end: datetime | None, days: int) -> bool:
    return day is not None and end is not None and 0 <= (day - end.date()).days <= days
