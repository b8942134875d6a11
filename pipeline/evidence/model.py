"""The evidence state: every clinical fact Provenote may say, each with the place it came from.

These models are the contract between the FHIR mapping, the agents and the summarizers. They know
nothing of FHIR's object model: a source is named by a reference string (``MedicationRequest/123``)
and an element path, so the pipeline can be fed from plain Python objects in tests.

The safety rules are enforced here and in :mod:`pipeline.clinical.validate`: a fact with no
provenance, or with a quote that is not found at its offsets, never reaches a summary.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

FactCategory = Literal[
    "diagnosis",
    "medication",
    "allergy",
    "procedure",
    "lab_result",
    "pending_result",
    "follow_up",
    "course",
    "patient_info",
    "encounter",
    "care_plan",
    "administration",
    "imaging",
    "medication_list",
    "condition_statement",
]
FACT_CATEGORIES: tuple[FactCategory, ...] = FactCategory.__args__  # type: ignore[attr-defined]


def no_facts() -> dict[FactCategory, list[Fact]]:
    """Every category, none filled yet."""
    return {category: [] for category in FACT_CATEGORIES}


MedicationPhase = Literal["admission", "inpatient", "discharge", "unknown"]


def stable_id(prefix: str, *parts: object) -> str:
    """Derive an id from content, so the same input always yields the same ids across runs."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8")).hexdigest()
    return f"{prefix}-{digest[:16]}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Coding(_Model):
    system: str | None = None
    code: str | None = None
    display: str | None = None


class SourceRef(_Model):
    """Where a statement comes from: a resource element, and for text the exact span and quote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resource: str
    version: str | None = None
    path: str
    document: str | None = None
    page: int | None = None
    start: int | None = None
    end: int | None = None
    quote: str | None = None

    @model_validator(mode="after")
    def _text_span_is_whole(self) -> SourceRef:
        span = (self.document, self.page, self.start, self.end, self.quote)
        if any(part is not None for part in span) and any(part is None for part in span):
            raise ValueError("a text SourceRef needs document, page, start, end and quote together")
        if self.start is not None and self.end is not None and not 0 <= self.start < self.end:
            raise ValueError("a text span needs 0 <= start < end")
        return self

    @property
    def is_text(self) -> bool:
        return self.quote is not None


class WordBox(_Model):
    """Where OCR found one word: its characters in the page's text and its rectangle on the
    page image, in fractions of the image's width and height, so the review page can mark a
    quoted span on the scan at any size."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    left: float
    top: float
    width: float
    height: float


class Page(_Model):
    number: int = Field(ge=1)
    text: str
    has_text: bool
    ocr_applied: bool = False
    ocr_confidence: float | None = None
    error: str | None = None
    words: list[WordBox] = Field(default_factory=list)


IdentityVerdict = Literal["match", "mismatch", "unverified"]
IdentifierKind = Literal["name", "birth_date", "identifier", "sex"]


class FoundIdentifier(BaseModel):
    """An identifier a document states, where, and whether it agrees with the chart."""

    kind: IdentifierKind
    text: str
    # Dates of birth: each reading of the date (dd/mm and mm/dd where both are dates), ISO.
    values: list[str]
    page: int
    start: int
    end: int
    agrees: bool | None = None


class IdentityCheck(BaseModel):
    verdict: IdentityVerdict
    reason: str
    found: list[FoundIdentifier] = Field(default_factory=list)


class SourceDocument(_Model):
    """One note or report; the same note presented by several resources is one document."""

    id: str
    sources: list[SourceRef]
    title: str | None = None
    date: datetime | None = None
    encounter: str | None = None
    content_type: str
    pages: list[Page] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    # Whose document this is (``pipeline.ingestion.identity``); a mismatch is never evidence.
    identity: IdentityCheck | None = None

    @property
    def other_patient(self) -> bool:
        return self.identity is not None and self.identity.verdict == "mismatch"

    def page(self, number: int) -> Page:
        for page in self.pages:
            if page.number == number:
                return page
        raise KeyError(f"{self.id} has no page {number}")


DiagnosisListing = Literal["principal", "episode", "active", "social", "stale"]


class DiagnosisAttributes(_Model):
    category: Literal["diagnosis"] = "diagnosis"
    display: str
    code: Coding | None = None
    role: Literal["encounter_diagnosis", "active_problem", "documented_in_note"]
    clinical_status: str | None = None
    verification_status: str | None = None
    onset: datetime | None = None
    abatement: datetime | None = None
    # The stay's own reason (Encounter.reasonReference/reasonCode, or its principal diagnosis).
    principal: bool = False
    # Where a physician lists it (pipeline.clinical.diagnoses): the principal diagnosis, a
    # diagnosis that began in the episode, an active problem, a social finding, or a stale acute
    # event.
    listing: DiagnosisListing | None = None
    # "History of X" where X was done in the episode: the procedure, and when.
    status_post: str | None = None
    status_post_on: datetime | None = None


class MedicationAttributes(_Model):
    category: Literal["medication"] = "medication"
    name: str
    code: Coding | None = None
    strength: str | None = None
    dose: str | None = None
    frequency: str | None = None
    route: str | None = None
    # Where the route came from: the order's route element, or the dose form in the name.
    route_source: Literal["order", "dose form"] | None = None
    as_needed: bool | None = None
    # "as needed for pain": the condition a PRN order names, when it names one.
    as_needed_for: str | None = None
    duration: str | None = None
    dosage_text: str | None = None
    status: str
    intent: str | None = None
    request_category: str | None = None
    authored_on: datetime | None = None
    phase: MedicationPhase
    phase_rule: str
    reason: str | None = None
    # Who ordered it, as the order names them (``requester.display``).
    prescriber: str | None = None
    # An order of the stay: when the same drug (RxNorm code) was last ordered before the
    # episode, whatever became of that order; a renewal is CONTINUED, not NEW.
    last_ordered_before: datetime | None = None
    # A MedicationStatement says the patient takes it; only an order makes it a prescription.
    recorded_as: Literal["order", "statement"] = "order"


class AllergyAttributes(_Model):
    category: Literal["allergy"] = "allergy"
    substance: str
    code: Coding | None = None
    no_known_allergies: bool = False
    reactions: list[str] = Field(default_factory=list)
    criticality: str | None = None
    clinical_status: str | None = None
    verification_status: str | None = None


class ProcedureAttributes(_Model):
    category: Literal["procedure"] = "procedure"
    name: str
    code: Coding | None = None
    status: str
    performed_start: datetime | None = None
    performed_end: datetime | None = None


ResultFlag = Literal["normal", "high", "low", "critical high", "critical low", "abnormal"]


class LabResultAttributes(_Model):
    category: Literal["lab_result"] = "lab_result"
    name: str
    code: Coding | None = None
    value: Decimal | None = None
    value_text: str | None = None
    unit: str | None = None
    reference_low: Decimal | None = None
    reference_high: Decimal | None = None
    reference_text: str | None = None
    interpretation: str | None = None
    effective: datetime | None = None
    observation_category: str | None = None
    # Computed in code (pipeline.clinical.results): the value at clinically sensible precision (the
    # citation keeps the stored one), where the range came from, and how the value reads.
    shown_value: str | None = None
    range_source: Literal["observation", "adult default"] | None = None
    flag: ResultFlag | None = None
    # The latest value before admission, kept to compare the stay against.
    baseline: bool = False


class PendingResultAttributes(_Model):
    category: Literal["pending_result"] = "pending_result"
    name: str
    code: Coding | None = None
    status: str
    ordered: datetime | None = None


class NarrativeAttributes(_Model):
    """A statement taken verbatim from a note (hospital course, follow-up, a medication list)."""

    category: Literal["course", "follow_up", "medication_list", "condition_statement"]
    text: str
    section: str | None = None
    # A medication list says either what the patient took at home (an H&P's "Medications") or
    # what was prescribed ("The patient was prescribed the following medications").
    list_kind: Literal["home", "prescribed"] | None = None


class PersonName(_Model):
    """One of a patient's names (official, maiden, nickname…) as the chart holds it."""

    given: list[str] = Field(default_factory=list)
    family: str | None = None


class PatientInfoAttributes(_Model):
    category: Literal["patient_info"] = "patient_info"
    name: str | None = None
    # Every name and identifier of the Patient, to tell whose a document is.
    names: list[PersonName] = Field(default_factory=list)
    identifiers: list[str] = Field(default_factory=list)
    gender: str | None = None
    birth_date: date | None = None
    age_at_encounter: int | None = None
    deceased: bool | None = None
    # Patient.identifier of type MR (the hospital's medical record number).
    mrn: str | None = None


class EncounterAttributes(_Model):
    category: Literal["encounter"] = "encounter"
    kind: Literal["stay", "chief_complaint"] = "stay"
    class_code: str | None = None
    types: list[str] = Field(default_factory=list)
    start: datetime | None = None
    end: datetime | None = None
    reasons: list[str] = Field(default_factory=list)
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
    # class, type or location says so.
    facility: str = "hospital"
    text: str | None = None


class CarePlanAttributes(_Model):
    """What the patient is to do or have after discharge: a care plan, a service request or an
    appointment."""

    category: Literal["care_plan"] = "care_plan"
    kind: Literal["care_plan", "service_request", "appointment"]
    title: str
    status: str | None = None
    activities: list[str] = Field(default_factory=list)
    addresses: list[str] = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)
    when: datetime | None = None


class AdministrationAttributes(_Model):
    """A vaccine or a medication given in the episode."""

    category: Literal["administration"] = "administration"
    kind: Literal["immunization", "medication"]
    name: str
    status: str | None = None
    when: datetime | None = None


class ImagingAttributes(_Model):
    """An imaging study of the episode, with its report's conclusion when there is one."""

    category: Literal["imaging"] = "imaging"
    name: str
    modality: str | None = None
    started: datetime | None = None
    conclusion: str | None = None


FactAttributes = Annotated[
    DiagnosisAttributes
    | MedicationAttributes
    | AllergyAttributes
    | ProcedureAttributes
    | LabResultAttributes
    | PendingResultAttributes
    | NarrativeAttributes
    | PatientInfoAttributes
    | EncounterAttributes
    | CarePlanAttributes
    | AdministrationAttributes
    | ImagingAttributes,
    Field(discriminator="category"),
]


class Fact(_Model):
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


ConflictKind = Literal[
    "duplicate_active_medication",
    "medication_allergy",
    "allergy_status",
    "condition_status",
    "lab_value",
]


class Conflict(_Model):
    """Two pieces of evidence that cannot both be true; flagged, never decided by the system."""

    id: str
    kind: ConflictKind
    description: str
    fact_ids: list[str]


FlagCode = Literal[
    "wrong_patient_document",
    "conflict",
    "unexplained_medication_change",
    "incomplete_medication",
    "medication_phase_unknown",
    "document_error",
    "page_unread",
    "fact_rejected",
    "loop_budget_exhausted",
    "stale_condition",
    "therapeutic_duplication",
    "allergy_conflict",
    "no_discharge_medications",
    "medication_discrepancy",
    "critical_result",
    "acute_kidney_injury",
    "medication_not_renewed",
    "regimen_risk",
    "home_medication_not_ordered",
    "prescribed_not_ordered",
]


class ReviewFlag(_Model):
    id: str
    code: FlagCode
    reason: str
    raised_by: str
    fact_ids: list[str] = Field(default_factory=list)
    document: str | None = None


class TraceEvent(_Model):
    step: int
    agent: str
    action: str
    detail: str
    resource: str | None = None
    document: str | None = None


ExclusionKind = Literal[
    "out_of_scope",
    "status",
    "historical",
    "parse_error",
    "unresolved",
    "not_fetched",
    "ai_generated",
]


class Exclusion(_Model):
    """A resource read but not turned into a fact, and why: nothing is dropped silently."""

    resource: str
    kind: ExclusionKind
    reason: str


class RejectedFact(_Model):
    fact: Fact
    reason: str


# "unconfirmed": an order from before the stay, still active, but last ordered long ago and not
# mentioned in the stay's notes: whether it is still taken is for the physician to confirm.
MedicationChangeKind = Literal[
    "new",
    "stopped",
    "changed",
    "continued",
    "unconfirmed",
    "held_or_stopped",
    "prescribed_not_ordered",
]


class MedicationChange(_Model):
    kind: MedicationChangeKind
    name: str
    admission: str | None = None
    discharge: str | None = None
    differences: list[str] = Field(default_factory=list)
    reason: str | None = None
    # The line of a note's medication list that names the drug (home or prescribed).
    noted: str | None = None
    # A drug a note prescribes: the stay's own orders of it (none active at discharge).
    stay_orders: list[str] = Field(default_factory=list)


class MedicationLists(_Model):
    admission: list[str] = Field(default_factory=list)
    discharge: list[str] = Field(default_factory=list)
    changes: list[MedicationChange] = Field(default_factory=list)

    def unconfirmed(self) -> list[str]:
        """The orders to confirm (too old to count as taken): every rule about what the
        patient takes leaves them out; their own flag asks about them."""
        return [c.admission for c in self.changes if c.kind == "unconfirmed" and c.admission]


class EpisodeEncounter(_Model):
    """An encounter of the hospitalization, and why it belongs to it."""

    resource: str
    reason: str


class EvidenceState(_Model):
    patient: str
    encounter: str | None = None
    # The hospitalization as one episode: the stay and the encounters that belong with it.
    episode: list[EpisodeEncounter] = Field(default_factory=list)
    # Where the available record starts, by kind of fact (``procedure``, ``lab_result``).
    record_begins: dict[str, datetime] = Field(default_factory=dict)
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
