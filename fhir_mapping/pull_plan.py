"""Which FHIR searches pull one stay's record: bounded by the episode, never the patient's lifetime.

A real patient has thousands of resources over decades; a discharge summary reads one stay. The
searches are bounded four ways: by the episode's encounters (what references them, dated or not),
by date around the episode (notes, results, reports, administrations, procedures, imaging: what
the mapping keeps only when it falls in the stay), by a look-back before admission (baseline
results, social history, recently ended problems and orders, the emergency visits and stays of
the weeks before), and by status for what matters whatever its age (active problems, allergies,
active orders, care plans); a stay coded as a transplant reads every encounter, since its
indication is often only an earlier visit's reason. Every bound is wider than the mapping's own
rule, so the mapping decides exactly as it would on the whole record.

Pure: dates and search parameters in, a list of searches out; ``smartapp`` runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fhir_mapping.json_values import JsonObject, string_at, strings_at
from fhir_mapping.organ_history import reads_earlier_care, reads_earlier_record
from pipeline.evidence.mapped import READMISSION_WINDOW_DAYS, RECENT_ACUTE_CARE_DAYS

# Statuses whose resources are kept whatever their date: what is still true at admission.
ACTIVE_CONDITION = "active,recurrence,relapse"
LIVE_ORDER = "active,on-hold,draft,unknown"
LIVE_PLAN = "active,on-hold,draft"
UPCOMING_APPOINTMENT = "proposed,pending,booked,arrived"
CURRENT_STATEMENT = "active,intended,on-hold,unknown"
ACUTE_CARE = "EMER,IMP,ACUTE,NONAC"


@dataclass(frozen=True, slots=True)
class Search:
    """One search: a resource type and its parameters (a list value repeats the parameter)."""

    resource_type: str
    params: Mapping[str, str | list[str]]


@dataclass(frozen=True, slots=True)
class StayWindow:
    """The stay's dates and the bounds around them that the searches use."""

    start: datetime
    end: datetime
    window: timedelta
    lookback: timedelta

    @property
    def episode_from(self) -> str:
        """Earliest date an encounter of the episode may end on: the episode window, or the
        readmission window for an inpatient stay just before, whichever is wider."""
        return _day(self.start - max(self.window, timedelta(days=READMISSION_WINDOW_DAYS)))

    @property
    def recent_care_from(self) -> str:
        """Earliest date of the acute care a draft names as recent: counted from the episode's
        start, which a readmission may move back by the readmission window."""
        days = RECENT_ACUTE_CARE_DAYS + READMISSION_WINDOW_DAYS
        return _day(self.start - timedelta(days=days))

    @property
    def lookback_from(self) -> str:
        return _day(self.start - self.lookback)

    @property
    def until(self) -> str:
        """Latest date a resource of the stay may carry (a day's slack for time zones)."""
        return _day(self.end + timedelta(days=1))


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def stay_window(
    encounter: JsonObject,
    window_h: float,
    lookback_days: int,
    now: datetime | None = None,
) -> StayWindow | None:
    """The stay's window from its Encounter; None when the encounter has no start date (the pull
    then cannot bound anything and takes the whole record)."""
    start, end = (
        _parse(string_at(encounter, "period", "start")),
        _parse(string_at(encounter, "period", "end")),
    )
    if start is None:
        return None
    return StayWindow(
        start=start,
        end=end or now or datetime.now(UTC),
        window=timedelta(hours=window_h),
        lookback=timedelta(days=lookback_days),
    )


def _parse(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def episode_searches(patient: str, encounter_id: str, window: StayWindow) -> list[Search]:
    """The episode: the patient's encounters around the stay, and those that are part of it."""
    episode = [f"ge{window.episode_from}", f"le{window.until}"]
    return [
        Search("Encounter", {"patient": f"Patient/{patient}", "date": episode}),
        Search(
            "Encounter", {"patient": f"Patient/{patient}", "part-of": f"Encounter/{encounter_id}"}
        ),
    ]


def stay_searches(patient: str, window: StayWindow) -> list[Search]:
    """The searches for one stay of ``Patient/{patient}`` besides its encounters'."""
    who = {"patient": f"Patient/{patient}"}
    episode = [f"ge{window.episode_from}", f"le{window.until}"]
    lookback = [f"ge{window.lookback_from}", f"le{window.until}"]
    return [
        # What happens in the stay, by date around the episode.
        Search("DocumentReference", who | {"date": episode}),
        Search("DiagnosticReport", who | {"date": episode}),
        Search("Procedure", who | {"date": episode}),
        # Doses of the look-back too: a drug a clinician gave at an earlier visit (a dentist's
        # fluoride gel) is an office treatment, never a home drug (``prescriptions``).
        Search("MedicationAdministration", who | {"effective-time": lookback}),
        Search("Immunization", who | {"date": episode}),
        Search("ImagingStudy", who | {"started": episode}),
        # Results: the stay's and, before it, baselines and social history.
        Search("Observation", who | {"date": lookback}),
        # Problems and orders: active whatever their age, ended ones within the look-back.
        Search("Condition", who | {"clinical-status": ACTIVE_CONDITION}),
        Search("Condition", who | {"recorded-date": lookback}),
        Search("Condition", who | {"onset-date": lookback}),
        Search("AllergyIntolerance", who),
        Search("MedicationRequest", who | {"status": LIVE_ORDER}),
        Search("MedicationRequest", who | {"authoredon": lookback}),
        Search("MedicationStatement", who | {"status": CURRENT_STATEMENT}),
        # Emergency visits and inpatient stays of the weeks before: named, not joined.
        Search(
            "Encounter",
            who
            | {"class": ACUTE_CARE, "date": [f"ge{window.recent_care_from}", f"le{window.until}"]},
        ),
        # What follows the stay: plans, referrals, appointments.
        Search("CarePlan", who | {"status": LIVE_PLAN}),
        Search("CarePlan", who | {"date": [f"ge{window.episode_from}"]}),
        Search("ServiceRequest", who | {"authored": [f"ge{window.episode_from}"]}),
        Search("Appointment", who | {"status": UPCOMING_APPOINTMENT}),
        Search("Goal", who | {"lifecycle-status": "proposed,planned,accepted,active,on-hold"}),
        # Implants, for life, and what was supplied (neither type has a date to search by).
        Search("Device", who),
        Search("SupplyDelivery", who),
    ]


def earlier_record_searches(patient: str, stay: JsonObject, window: StayWindow) -> list[Search]:
    """For a stay coded as a transplant or a sterilization, every encounter of the patient: a
    transplant's indication is often only an earlier visit's reason, decades back, and the
    contraception care a sterilization ends only earlier visits'
    (``fhir_mapping.organ_history``); for a sterilization, the procedures of the look-back too,
    what those visits did (a quarterly injection, with no drug order)."""
    reasons = [
        *strings_at(stay, "reasonCode", "text"),
        *strings_at(stay, "reasonCode", "coding", "display"),
    ]
    if not reads_earlier_record(reasons):
        return []
    who = {"patient": f"Patient/{patient}"}
    searches = [Search("Encounter", who)]
    if reads_earlier_care(reasons):
        lookback = [f"ge{window.lookback_from}", f"le{window.until}"]
        searches.append(Search("Procedure", who | {"date": lookback}))
    return searches


# What the mapping keeps when it references an encounter of the episode: searched by those
# encounters too, since a resource may reference the stay and carry no date.
BY_ENCOUNTER = {
    "DocumentReference": "encounter",
    "DiagnosticReport": "encounter",
    "Procedure": "encounter",
    "Observation": "encounter",
    "MedicationRequest": "encounter",
    "MedicationAdministration": "context",
    "MedicationStatement": "context",
    "Condition": "encounter",
    "CarePlan": "encounter",
}


def encounter_searches(patient: str, encounter_ids: list[str]) -> list[Search]:
    """Resources that reference any of the episode's encounters (one search per type)."""
    if not encounter_ids:
        return []
    listed = ",".join(f"Encounter/{encounter_id}" for encounter_id in sorted(set(encounter_ids)))
    return [
        Search(kind, {"patient": f"Patient/{patient}", parameter: listed})
        for kind, parameter in BY_ENCOUNTER.items()
    ]


def unbounded(search: Search) -> Search:
    """The search by patient alone: for an EHR that refuses one of the bounds (HTTP 400)."""
    return Search(search.resource_type, {"patient": search.params["patient"]})


def whole_record_searches(patient: str, resource_types: tuple[str, ...]) -> list[Search]:
    """Every resource of the patient, for a stay with no dates to bound by."""
    return [Search(kind, {"patient": f"Patient/{patient}"}) for kind in resource_types]


def record_start_searches(patient: str) -> list[Search]:
    """The patient's earliest procedure and laboratory result (one of each, first page only): so
    that a draft can tell "none in this stay" from "the available record starts later"."""
    who = {"patient": f"Patient/{patient}", "_sort": "date", "_count": "1"}
    return [
        Search("Procedure", who),
        Search("Observation", who | {"category": "laboratory"}),
    ]


def latest_note_search(patient: str, window: StayWindow) -> Search:
    """The patient's latest note before the notes the stay's searches read (first page only):
    with those, the latest note before the episode, whose chief complaint a templated note of
    the stay may carry forward (``fhir_mapping.documents.earlier_note``)."""
    return Search(
        "DocumentReference",
        {
            "patient": f"Patient/{patient}",
            "date": f"lt{window.episode_from}",
            "_sort": "-date",
            "_count": "1",
        },
    )


def stay_search(patient: str, inpatient_classes: list[str]) -> list[Search]:
    """The patient's latest inpatient encounter, then their latest of any class: how a job with
    no encounter in its launch finds the stay to summarize."""
    who = {"patient": f"Patient/{patient}", "_sort": "-date", "_count": "1"}
    return [
        Search("Encounter", who | {"class": ",".join(inpatient_classes)}),
        Search("Encounter", who),
    ]
