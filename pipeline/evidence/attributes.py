"""The attributes of each kind of fact (diagnosis, medication, procedure, result, encounter…), one
model per category, discriminated by ``category``."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field

from pipeline.evidence.base import Coding, MedicationPhase, StrictModel
from pipeline.evidence.stay_attributes import EncounterAttributes, PatientInfoAttributes

DiagnosisListing = Literal[
    "principal", "episode", "active", "social", "stale", "superseded", "specified"
]


class DiagnosisAttributes(StrictModel):
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
    # The stay's coded reason this diagnosis, made in the stay, names more specifically ("Sleep
    # disorder" for "Obstructive sleep apnea syndrome"): it is the principal diagnosis instead.
    specifies: str | None = None
    # "History of X" where X was done in the episode: the procedure, and when.
    status_post: str | None = None
    status_post_on: datetime | None = None


class MedicationAttributes(StrictModel):
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
    # The dose units a day the instruction gives (tablets, patches), computed in code.
    units_per_day: float | None = None
    status: str
    intent: str | None = None
    request_category: str | None = None
    authored_on: datetime | None = None
    phase: MedicationPhase
    phase_rule: str
    reason: str | None = None
    # What the visit that wrote the order was for, where that visit was for a problem or a
    # symptom and the order names no reason of its own (a vitamin B12 at a visit for anaemia).
    ordered_at_visit_for: str | None = None
    # Who ordered it, as the order names them (``requester.display``).
    prescriber: str | None = None
    # An order of the stay: when the same drug (RxNorm code) was last ordered before the
    # episode, whatever became of that order; a renewal is CONTINUED, not NEW.
    last_ordered_before: datetime | None = None
    # A MedicationStatement says the patient takes it; only an order makes it a prescription.
    recorded_as: Literal["order", "statement"] = "order"


class AllergyAttributes(StrictModel):
    category: Literal["allergy"] = "allergy"
    substance: str
    code: Coding | None = None
    no_known_allergies: bool = False
    reactions: list[str] = Field(default_factory=list)
    criticality: str | None = None
    clinical_status: str | None = None
    verification_status: str | None = None


class ProcedureAttributes(StrictModel):
    category: Literal["procedure"] = "procedure"
    name: str
    code: Coding | None = None
    status: str
    performed_start: datetime | None = None
    performed_end: datetime | None = None


ResultFlag = Literal["normal", "high", "low", "critical high", "critical low", "abnormal"]


class LabResultAttributes(StrictModel):
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


class PendingResultAttributes(StrictModel):
    category: Literal["pending_result"] = "pending_result"
    name: str
    code: Coding | None = None
    status: str
    ordered: datetime | None = None


class NarrativeAttributes(StrictModel):
    """A statement taken verbatim from a note (hospital course, follow-up, a medication list)."""

    category: Literal[
        "course", "follow_up", "medication_list", "condition_statement", "social_statement"
    ]
    text: str
    section: str | None = None
    # A medication list says either what the patient took at home (an H&P's "Medications") or
    # what was prescribed ("The patient was prescribed the following medications").
    list_kind: Literal["home", "prescribed"] | None = None


class CarePlanAttributes(StrictModel):
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
    # A plan in effect at discharge whose status is no longer active: when it ended.
    until: datetime | None = None
    # A care plan for the stay's own reason that began before it: the ongoing plan the stay
    # returns to (addiction counselling after a detoxification), said with its start.
    before_stay: bool = False


class AdministrationAttributes(StrictModel):
    """A vaccine or a medication given in the episode."""

    category: Literal["administration"] = "administration"
    kind: Literal["immunization", "medication"]
    name: str
    status: str | None = None
    when: datetime | None = None


class ImagingAttributes(StrictModel):
    """An imaging study of the episode, with its report's conclusion when there is one."""

    category: Literal["imaging"] = "imaging"
    name: str
    modality: str | None = None
    started: datetime | None = None
    conclusion: str | None = None


class DeviceAttributes(StrictModel):
    """A device on the patient's record (an implant such as a heart valve or a stent, or home
    equipment), or an item supplied during the stay (a kidney graft). Which devices are implants
    is the pipeline's ``implants`` table's to say, not the mapping's."""

    category: Literal["device"] = "device"
    kind: Literal["device", "supplied"]
    name: str
    # The device record's date (manufacture, else expiry) or the delivery's time.
    when: datetime | None = None
    status: str | None = None


class PrescriptionAttributes(StrictModel):
    """A prescription of the months before the episode that has ended (completed or stopped):
    never a current medication, but the record's last word on how a home drug was taken, for a
    drug the notes list with no order (the best possible medication history)."""

    category: Literal["prescription"] = "prescription"
    name: str
    dose: str | None = None
    frequency: str | None = None
    as_needed: bool | None = None
    dosage_text: str | None = None
    units_per_day: float | None = None
    authored_on: datetime
    status: str
    # Given by a clinician at the visit that wrote it: an office treatment, not a home drug.
    given_at_visit: bool = False
    # Completed for an illness that resolved before the episode (its name, when): a finished
    # course, not a home drug.
    course_for: str | None = None
    course_ended: datetime | None = None


class OrganHistoryAttributes(StrictModel):
    """What the earlier record says of an organ the stay transplants or awaits a graft for (the
    transplant's indication), or of the care a sterilization ends: an earlier encounter's reason
    ("Chronic kidney disease stage 4", "Contraception care", the latest visit's date) or an
    active care plan ("Dialysis care plan", its start). Which of them matter is the pipeline's
    tables' to say (``transplant_organs``; ``indicated_therapy``'s ``visits``)."""

    category: Literal["organ_history"] = "organ_history"
    kind: Literal["encounter_reason", "care_plan"]
    text: str
    when: datetime | None = None
    # What the latest such visit did, its procedures ("Intramuscular injection" at a
    # contraception care visit): the care itself, where no drug order records it.
    done: list[str] = Field(default_factory=list)


class ComputedAttributes(StrictModel):
    """A number computed in code from the facts it cites (MA-RAG: numbers are computed, never
    written by a model, and every number of a line is checked against its cited facts): what it
    is, its value and unit, and how it was computed. Its sources are those of its inputs."""

    category: Literal["computed"] = "computed"
    name: str
    value: Decimal
    unit: str
    method: str


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
    | ImagingAttributes
    | DeviceAttributes
    | OrganHistoryAttributes
    | PrescriptionAttributes
    | ComputedAttributes,
    Field(discriminator="category"),
]
