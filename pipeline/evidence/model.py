"""The evidence state: every clinical fact Provenote may say, each with the place it came from.

These models are the contract between the FHIR mapping, the agents and the summarizers. They know
nothing of FHIR's object model: a source is named by a reference string (``MedicationRequest/123``)
and an element path, so the pipeline can be fed from plain Python objects in tests.

The safety rules are enforced here and in :mod:`pipeline.clinical.validate`: a fact with no
provenance, or with a quote that is not found at its offsets, never reaches a summary.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

from pydantic import BaseModel, Field, model_validator

from pipeline.evidence.attributes import (
    AdministrationAttributes,
    AllergyAttributes,
    CarePlanAttributes,
    ComputedAttributes,
    DeviceAttributes,
    DiagnosisAttributes,
    DiagnosisListing,
    FactAttributes,
    ImagingAttributes,
    LabResultAttributes,
    MedicationAttributes,
    NarrativeAttributes,
    OrganHistoryAttributes,
    PendingResultAttributes,
    PrescriptionAttributes,
    ProcedureAttributes,
    ResultFlag,
)
from pipeline.evidence.base import (
    FACT_CATEGORIES,
    Coding,
    FactCategory,
    MedicationPhase,
    StrictModel,
    stable_id,
)
from pipeline.evidence.medication_lists import (
    MedicationChange,
    MedicationChangeKind,
    MedicationLists,
)
from pipeline.evidence.review_flags import (
    Conflict,
    ConflictKind,
    Exclusion,
    ExclusionKind,
    FlagCode,
    ReviewFlag,
    TraceEvent,
)
from pipeline.evidence.sources import (
    FoundIdentifier,
    IdentifierKind,
    IdentityCheck,
    IdentityVerdict,
    Page,
    SourceDocument,
    SourceRef,
    WordBox,
)
from pipeline.evidence.stay_attributes import (
    EncounterAttributes,
    OtherEncounter,
    PatientInfoAttributes,
    PersonName,
)


def no_facts() -> dict[FactCategory, list[Fact]]:
    """Every category, none filled yet."""
    return {category: [] for category in FACT_CATEGORIES}


class Fact(StrictModel):
    """One clinical statement. ``sources`` may be empty only so validation can reject it."""

    id: str
    category: FactCategory
    attributes: FactAttributes
    sources: list[SourceRef] = Field(default_factory=list)

    @model_validator(mode="after")
    def _attributes_match_category(self) -> Fact:
        if self.attributes.category != self.category:
            raise ValueError(
                f"fact {self.id}: attributes are {self.attributes.category!r}, "
                f"category is {self.category!r}"
            )
        return self


AttributesT = TypeVar("AttributesT", bound=BaseModel)


def attributes_as(fact: Fact, kind: type[AttributesT]) -> AttributesT:
    """The fact's attributes as the type its category promises (``Fact`` validates that the
    two agree, so a mismatch here is a programming error, not bad input)."""
    if not isinstance(fact.attributes, kind):
        raise TypeError(f"fact {fact.id} holds {fact.attributes.category}, not {kind.__name__}")
    return fact.attributes


class RejectedFact(StrictModel):
    fact: Fact
    reason: str


class EpisodeEncounter(StrictModel):
    """An encounter of the hospitalization, and why it belongs to it."""

    resource: str
    reason: str


class EvidenceState(StrictModel):
    patient: str
    encounter: str | None = None
    # The hospitalization as one episode: the stay and the encounters that belong with it.
    episode: list[EpisodeEncounter] = Field(default_factory=list)
    # Where the available record starts, by kind of fact (``procedure``, ``lab_result``).
    record_begins: dict[str, datetime] = Field(default_factory=dict)
    # The chief complaints of the patient's latest note before the episode, and when it was
    # written: a complaint in the same words is carried forward by templated notes.
    complaints_before: list[str] = Field(default_factory=list)
    complaints_noted_on: datetime | None = None
    documents: list[SourceDocument] = Field(default_factory=list)
    facts: dict[FactCategory, list[Fact]] = Field(default_factory=no_facts)
    medications: MedicationLists = Field(default_factory=MedicationLists)
    conflicts: list[Conflict] = Field(default_factory=list)
    missing_fields: list[FactCategory] = Field(default_factory=list)
    flags_for_review: list[ReviewFlag] = Field(default_factory=list)
    exclusions: list[Exclusion] = Field(default_factory=list)
    rejected_facts: list[RejectedFact] = Field(default_factory=list)
    trace: list[TraceEvent] = Field(default_factory=list)
    step_count: int = 0

    def all_facts(self) -> list[Fact]:
        return [fact for category in FACT_CATEGORIES for fact in self.facts.get(category, [])]

    def fact(self, fact_id: str) -> Fact:
        for fact in self.all_facts():
            if fact.id == fact_id:
                return fact
        raise KeyError(fact_id)

    def document(self, document_id: str) -> SourceDocument:
        for document in self.documents:
            if document.id == document_id:
                return document
        raise KeyError(document_id)

    def patient_age(self) -> tuple[Fact, int] | None:
        """The patient's fact and their age at the stay, when the record gives a birth date."""
        for fact in self.facts.get("patient_info", []):
            if isinstance(fact.attributes, PatientInfoAttributes):
                age = fact.attributes.age_at_encounter
                return (fact, age) if age is not None else None
        return None

    def patient_gender(self) -> str | None:
        """The patient's administrative gender, which sex-specific ranges and cut-offs read."""
        for fact in self.facts.get("patient_info", []):
            if isinstance(fact.attributes, PatientInfoAttributes):
                return fact.attributes.gender
        return None

    def stay(self) -> EncounterAttributes | None:
        """The stay being summarised (its dates, class, reasons), if the record has it."""
        for fact in self.facts.get("encounter", []):
            if isinstance(fact.attributes, EncounterAttributes) and fact.attributes.kind == "stay":
                return fact.attributes
        return None


def aware(moment: datetime) -> datetime:
    """The moment with a time zone: the mapping gives aware datetimes; one that came without
    (a hand-made or older state) is taken as UTC, so any two moments compare."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def group_facts(facts: list[Fact]) -> dict[FactCategory, list[Fact]]:
    """Facts by category, every category present, order kept within each."""
    grouped: dict[FactCategory, list[Fact]] = {category: [] for category in FACT_CATEGORIES}
    for fact in facts:
        grouped[fact.category].append(fact)
    return grouped


# The evidence model's whole vocabulary, one import away for the other rooms.
__all__ = [
    "FACT_CATEGORIES",
    "AdministrationAttributes",
    "AllergyAttributes",
    "CarePlanAttributes",
    "Coding",
    "ComputedAttributes",
    "Conflict",
    "ConflictKind",
    "DeviceAttributes",
    "DiagnosisAttributes",
    "DiagnosisListing",
    "EncounterAttributes",
    "EpisodeEncounter",
    "EvidenceState",
    "Exclusion",
    "ExclusionKind",
    "Fact",
    "FactAttributes",
    "FactCategory",
    "FlagCode",
    "FoundIdentifier",
    "IdentifierKind",
    "IdentityCheck",
    "IdentityVerdict",
    "ImagingAttributes",
    "LabResultAttributes",
    "MedicationAttributes",
    "MedicationChange",
    "MedicationChangeKind",
    "MedicationLists",
    "MedicationPhase",
    "NarrativeAttributes",
    "OrganHistoryAttributes",
    "OtherEncounter",
    "Page",
    "PatientInfoAttributes",
    "PendingResultAttributes",
    "PersonName",
    "PrescriptionAttributes",
    "ProcedureAttributes",
    "RejectedFact",
    "ResultFlag",
    "ReviewFlag",
    "SourceDocument",
    "SourceRef",
    "StrictModel",
    "TraceEvent",
    "WordBox",
    "attributes_as",
    "aware",
    "group_facts",
    "no_facts",
    "stable_id",
]
