"""Who the patient is and what the stay was: the attributes of the header's facts (the patient,
the stay and the encounters the draft names beside it)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import Field

from pipeline.evidence.base import StrictModel


class PersonName(StrictModel):
    """One of a patient's names (official, maiden, nickname…) as the chart holds it."""

    given: list[str] = Field(default_factory=list)
    family: str | None = None


class PatientInfoAttributes(StrictModel):
    category: Literal["patient_info"] = "patient_info"
    name: str | None = None
    # Every name and identifier of the Patient, to tell whose a document is.
    names: list[PersonName] = Field(default_factory=list)
    identifiers: list[str] = Field(default_factory=list)
    gender: str | None = None
    birth_date: date | None = None
    age_at_encounter: int | None = None
    # At discharge (or now, for an open stay), where a birthday falls within the stay.
    age_at_discharge: int | None = None
    deceased: bool | None = None
    # Patient.identifier of type MR (the hospital's medical record number).
    mrn: str | None = None


class OtherEncounter(StrictModel):
    """An encounter beside the stay that the draft names: one joined to the episode (and why), or
    recent acute care before it."""

    class_code: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    reasons: list[str] = Field(default_factory=list)
    types: list[str] = Field(default_factory=list)
    why: str | None = None


class EncounterAttributes(StrictModel):
    category: Literal["encounter"] = "encounter"
    kind: Literal["stay", "chief_complaint"] = "stay"
    class_code: str | None = None
    types: list[str] = Field(default_factory=list)
    start: datetime | None = None
    end: datetime | None = None
    reasons: list[str] = Field(default_factory=list)
    # The stay's own reason codes that say what was arranged, not why ("Sterilization
    # requested", a transfer): never a reason or a diagnosis, but what the stay was coded as.
    arranged_reasons: list[str] = Field(default_factory=list)
    # The episode's encounter the reasons were read from, when the stay's own codes are only
    # administrative (a transfer to a skilled nursing facility): its reason, not this stay's.
    reasons_from: OtherEncounter | None = None
    discharge_disposition: str | None = None
    # The attending (Encounter.participant ATND, else the primary performer).
    attending: str | None = None
    # Admitted from: the emergency visit of the episode, or the admit source.
    admitted_from: str | None = None
    # Calendar days from admission to discharge, computed in code.
    length_of_stay_days: int | None = None
    # When the episode began, if before the stay (the emergency visit, the surgery the day
    # before), and its calendar days to discharge.
    episode_start: datetime | None = None
    episode_days: int | None = None
    # What kind of place the stay was in: "hospital", or "skilled nursing facility" when its
    # class, type or reason says so.
    facility: str = "hospital"
    # A location whose name names a kind of place the codes do not ("… DP SNF"): shown, not
    # read as the kind of stay.
    facility_location: str | None = None
    text: str | None = None
    # The other encounters of the episode (the emergency visit, the surgery, the stay just
    # before), and the emergency visits and stays of the weeks before it, not joined.
    joined: list[OtherEncounter] = Field(default_factory=list)
    recent_acute_care: list[OtherEncounter] = Field(default_factory=list)
