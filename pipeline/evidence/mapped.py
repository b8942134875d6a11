"""What the FHIR mapping hands the pipeline: one stay's facts, exclusions and unread documents.

The mapping (``fhir_mapping.record.map_record``) is pure: it decides what belongs to the stay and
turns structured resources into facts, but reads no attachment. The documents it found are
handed over as bytes with where they came from; ``pipeline.build.build_evidence`` reads them
(text, HTML, PDF, OCR under one budget) and builds the evidence state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pipeline.evidence.model import Exclusion, Fact, SourceRef

# Hours before admission within which an encounter that did something (a procedure, a reason,
# an emergency visit) belongs to the hospitalization: the surgery the day before the ward stay.
EPISODE_WINDOW_H = 48.0
# Encounter.class codes of an inpatient stay (v3 ActCode).
INPATIENT_CLASSES = frozenset({"IMP", "ACUTE", "NONAC"})
# Days before admission within which an inpatient stay that ended belongs to the hospitalization
# (a readmission: the ward stay days after a valve replacement continues that stay's care).
READMISSION_WINDOW_DAYS = 7
# Days before the episode within which emergency visits and inpatient stays are named as recent
# acute care, not joined (the window of CMS's 30-day readmission measures): an overdose two weeks
# before a detoxification admission is what the discharge plan must answer.
RECENT_ACUTE_CARE_DAYS = 30
# Days before admission within which a laboratory result the stay never repeated is still the
# patient's current value (a potassium of 5.1 the week before a stay with no laboratory work).
RECENT_RESULTS_DAYS = 14
# Days before the episode within which an ended prescription is the record's last word on how a
# home drug was taken (no wider than the pull's default look-back, so that a stay-bounded pull
# reads every one of them).
PRESCRIPTION_HISTORY_DAYS = 365
# Measures that stay the patient's current value until they are measured again, whatever their
# age: the left ventricular ejection fraction is what classifies heart failure (reduced, mildly
# reduced, preserved; ACC/AHA/HFSA 2022, section 3) and decides its drugs, and an echocardiogram
# is repeated only when the picture changes. LOINC codes, and the words of their names for a
# record that codes them otherwise.
LASTING_MEASURE_CODES = frozenset({"10230-1", "8806-2", "18043-0", "8808-8", "8810-4", "8811-2"})
LASTING_MEASURE_WORDS = ("ejection fraction",)


# Measures read before the stay for a problem on the list, by LOINC code, each with the days
# before admission it is read for (no wider than the pull's default look-back): a body mass
# index defines obesity, read for the year before, so that a problem the latest measure no
# longer bears out says so (``pipeline.clinical.problem_measures``); an HbA1c is a diabetes's
# glycaemic control, measured on admission where none of the 3 months before is on record (ADA
# Standards of Care in Diabetes 2024, 16.1), so one of those months answers the rule that asks
# for it (``pipeline.clinical.indicated_procedures``). They are not results of the stay and no
# results line shows them.
PROBLEM_MEASURE_DAYS: dict[str, int] = {"39156-5": 365, "4548-4": 90, "17856-6": 90}


def is_problem_measure(code: str | None) -> bool:
    """Whether a result is a measure read only against the problem list it bears on."""
    return code in PROBLEM_MEASURE_DAYS


def is_lasting_measure(code: str | None, name: str | None) -> bool:
    """Whether a measure keeps its last value, of whatever date (``LASTING_MEASURE_CODES``)."""
    words = (name or "").lower()
    return code in LASTING_MEASURE_CODES or any(word in words for word in LASTING_MEASURE_WORDS)


@dataclass(slots=True)
class PendingDocument:
    """An attachment to read: its bytes once (the same bytes cited by several resources are one
    document), or the errors that kept it from being read."""

    key: str
    data: bytes
    content_type: str | None
    title: str | None
    date: datetime | None
    sources: list[SourceRef] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class MappedRecord:
    """One stay as mapped from FHIR: the patient, the stay and its episode (encounter → why it
    belongs), the facts and exclusions, and the documents still to read."""

    patient: str
    encounter: str
    episode: dict[str, str]
    facts: list[Fact]
    exclusions: list[Exclusion]
    documents: list[PendingDocument]
    # The earliest date of each kind of fact the available record holds (procedure,
    # lab_result): a section empty because the record starts after the stay says so.
    record_begins: dict[str, datetime] = field(default_factory=dict)
    # The patient's latest note before the episode, read only to tell a chief complaint carried
    # forward by templated notes from this stay's own; never evidence.
    earlier_note: PendingDocument | None = None
