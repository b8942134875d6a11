"""Heart failure as a stay's principal diagnosis names its kind: acute or chronic, and the
ejection fraction's class.

A stay coded "Chronic congestive heart failure" that an emergency visit for heart failure
began is acute heart failure by the ESC definition (symptoms severe enough to seek urgent care,
leading to an unplanned admission; in a patient known to have heart failure, an acutely
decompensated chronic heart failure: ESC 2021 heart failure guideline, section 11), which the
chronic code leaves unsaid: the ICD-10-CM code (acute on chronic), the treatment and the
follow-up differ. The 2022 AHA/ACC/HFSA guideline classifies heart failure by the left
ventricular ejection fraction: reduced (40 % or less), mildly reduced (41 to 49 %), preserved
(50 % or more). Readers of a heart-failure readmission asked in every round that the diagnosis
say both ("should read acute decompensation of chronic HF with mildly reduced EF"). Both are
read from the record in code, never guessed: the emergency visit joined to the episode, and the
latest ejection fraction on record (the ``diagnosis_specifics`` table's ``heart_failure``).
"""

from __future__ import annotations

from typing import NamedTuple

from pipeline.clinical.risk_flags import current_results, latest_fact
from pipeline.clinical.screening import band_reached
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    LabResultAttributes,
    OtherEncounter,
    attributes_as,
    aware,
)


class HeartFailureKind(NamedTuple):
    """What the record says of a heart failure the stay was for: the emergency visit that began
    it (an acute decompensation), and the latest ejection fraction with its class."""

    emergency: OtherEncounter | None
    ejection_fraction: Fact | None
    ejection_class: str | None


def heart_failure_kind(
    state: EvidenceState, principal: str, specifics: CodeTable
) -> HeartFailureKind | None:
    """For a principal diagnosis of heart failure, what the record says of its kind; None for
    any other diagnosis, or where the record says neither."""
    rules = specifics.extra.get("heart_failure")
    if rules is None or not names_it(principal, rules["principal"]):
        return None
    encounter = state.stay()
    emergency = None
    if encounter is not None and encounter.start is not None:
        admitted = aware(encounter.start)
        # The visit that began the stay: by its start, never one later in it.
        emergency = next(
            (
                other
                for other in encounter.joined
                if other.class_code == "EMER"
                and other.start is not None
                and aware(other.start) <= admitted
                and any(names_it(reason, rules["principal"]) for reason in other.reasons)
            ),
            None,
        )
    # The stay's ejection fraction, else the latest before it (a lasting measure).
    measured = latest_fact(current_results(state, rules["ejection_fraction_codes"]))
    value = attributes_as(measured, LabResultAttributes).value if measured else None
    ejection_class = band_reached(float(value), rules["classes"]) if value is not None else None
    if emergency is None and ejection_class is None:
        return None
    return HeartFailureKind(emergency, measured, ejection_class)
