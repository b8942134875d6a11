"""The write-back as a plan: what goes to the EHR, in what order, on what conditions.

Pure (ARCHITECTURE.md): from the draft's typed resources, the EHR's CapabilityStatement and the
granted scopes it decides the strategy, and returns steps that ``smartapp.ehr.writeback``
executes over HTTP. A Composition where the server creates them; else a DocumentReference with
``docStatus=preliminary``; where the server takes only ``final`` notes, nothing before sign-off;
Provenance where allowed. A Composition the EHR refuses although it advertised it (403, 405, 422)
is written as a DocumentReference instead (the plan's ``otherwise``), and the AI Device is
created only after the EHR has taken the note, so a refusal leaves nothing orphaned.

Steps refer to what the EHR will create by placeholders (like a transaction's ``urn:uuid``):
``NOTE`` for the written note, ``DEVICE`` for the written Device; the executor replaces them with
the ids the EHR assigns. Idempotency: the key (installation, patient, encounter, draft version)
is the note's identifier; notes are created with ``If-None-Exist`` on it, so a retried job finds
what it wrote, and two installations on one EHR never adopt each other's notes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from fhir.resources.R4B.composition import Composition
from fhir.resources.R4B.device import Device
from fhir.resources.R4B.documentreference import DocumentReference
from fhir.resources.R4B.identifier import Identifier
from fhir.resources.R4B.provenance import Provenance
from fhir.resources.R4B.reference import Reference

from fhir_mapping.composition import DRAFT_KEY_SYSTEM, TARGET_ELEMENT
from fhir_mapping.document_reference import draft_document_reference
from fhir_mapping.draft_resources import DraftResources
from fhir_mapping.references import ResourceT, rewrite_references
from fhir_mapping.signoff import verifier_provenance
from fhir_mapping.smart_scopes import granted
from fhir_mapping.write_strategy import Capability, Strategy, choose_strategy

# Answers by which an EHR refuses a Composition it advertised: try a DocumentReference instead.
COMPOSITION_REFUSED = frozenset({403, 405, 422})
NOTE = "urn:provenote:written-note"
DEVICE = "urn:provenote:written-device"
AI_AGENT_DISPLAY = "Provenote AI drafting software"


def idempotency_key(installation: str, patient: str, encounter: str, version: int) -> str:
    text = f"{installation}|{patient}|{encounter}|{version}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def key_identifier(key: str) -> Identifier:
    return Identifier(system=DRAFT_KEY_SYSTEM, value=key)


@dataclass(frozen=True, slots=True)
class WrittenCopy:
    """What an earlier write left in the EHR: updated (``If-Match`` its version), not created."""

    strategy: Strategy
    resource_id: str
    version: str | None


@dataclass(frozen=True, slots=True)
class DraftNote:
    """The draft as a clinical note: its text and whom it is about, and its signature if any."""

    markdown: str
    patient: str
    encounter: str | None
    signed_by: str | None = None
    signed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class WriteNote:
    """Create the note once (``If-None-Exist`` on its key), or update the copy written before
    (``If-Match`` the version written, so a copy changed in the EHR meanwhile is refused)."""

    resource_type: str
    resource: Composition | DocumentReference
    condition: str
    update: WrittenCopy | None = None


@dataclass(frozen=True, slots=True)
class CreateDevice:
    """Create the AI Device once (``If-None-Exist`` on its identifier); it becomes ``DEVICE``."""

    resource: Device
    condition: str


@dataclass(frozen=True, slots=True)
class AddProvenances:
    """Create each Provenance not already on the written note (one per source element)."""

    provenances: tuple[Provenance, ...]


Step = WriteNote | CreateDevice | AddProvenances


@dataclass(frozen=True, slots=True)
class WritePlan:
    """Steps in order; where the EHR refuses the note with a status in ``refused``, the
    ``otherwise`` plan instead. No steps: nothing is written (strategy says why)."""

    strategy: Strategy
    steps: tuple[Step, ...] = ()
    refused: frozenset[int] = field(default_factory=frozenset)
    otherwise: WritePlan | None = None


def provenance_key(provenance: Provenance) -> str:
    """What makes two Provenances on one note the same: the element they trace and what they
    record (the AI's authorship, or a physician's verification)."""
    element = next(
        (
            extension.valueUri
            for target in provenance.target
            for extension in target.extension or []
            if extension.url == TARGET_ELEMENT
        ),
        None,
    )
    activity = [c.code for c in provenance.activity.coding or []] if provenance.activity else []
    roles = [c.code for agent in provenance.agent if agent.type for c in agent.type.coding or []]
    return repr((element, activity, roles))


def _with_contained_device(resource: ResourceT, resources: DraftResources) -> ResourceT:
    """``resource`` carrying the AI Device contained as ``#device`` (its references to the
    Device are rewritten with the rest), for an EHR that is not asked to create Devices."""
    device = resources.device.model_copy(update={"id": "device"})
    return resource.model_copy(update={"contained": [device]})


def _composition_plan(
    resources: DraftResources,
    scope: str,
    key: str,
    with_provenance: bool,
    update: WrittenCopy | None,
) -> tuple[Step, ...]:
    device_url = resources.device_url
    composition = rewrite_references(
        _with_contained_device(resources.composition, resources),
        {device_url: "#device"},
    ).model_copy(update={"identifier": key_identifier(key)})
    steps: list[Step] = [
        WriteNote("Composition", composition, f"identifier={DRAFT_KEY_SYSTEM}|{key}", update)
    ]
    if not with_provenance:
        return tuple(steps)
    targets = {resources.composition_url: NOTE}
    if granted(scope, "Device", "c", restricted_ok=True):
        identifier = resources.device.identifier[0] if resources.device.identifier else None
        if identifier is not None:
            condition = f"identifier={identifier.system}|{identifier.value}"
            steps.append(CreateDevice(resources.device, condition))
            targets[device_url] = DEVICE
    # Where the EHR gets no Device of its own, each Provenance carries it.
    contained = device_url not in targets
    provenances = tuple(
        rewrite_references(
            _with_contained_device(p, resources) if contained else p,
            targets | ({device_url: "#device"} if contained else {}),
        )
        for p in resources.provenances
    )
    steps.append(AddProvenances(provenances))
    return tuple(steps)


def _document_plan(
    resources: DraftResources,
    note: DraftNote,
    key: str,
    with_provenance: bool,
    update: WrittenCopy | None,
    at: datetime,
) -> tuple[Step, ...]:
    resource = draft_document_reference(
        text=note.markdown,
        patient=f"Patient/{note.patient}",
        encounter=f"Encounter/{note.encounter}" if note.encounter else None,
        identifier=key_identifier(key),
        doc_status="final" if note.signed_by else "preliminary",
        date=at,
        signed_by=note.signed_by,
    )
    steps: list[Step] = [
        WriteNote("DocumentReference", resource, f"identifier={DRAFT_KEY_SYSTEM}|{key}", update)
    ]
    if not with_provenance:
        return tuple(steps)
    provenances: list[Provenance] = []
    if note.signed_by and note.signed_at:
        provenances.append(verifier_provenance(NOTE, note.signed_by, note.signed_at))
    authored = next(iter(resources.provenances), None)
    if authored is not None:
        # The whole note, by the AI named in words: no Device is written beside a plain note.
        ai_agent = Reference(display=AI_AGENT_DISPLAY)
        agents = [a.model_copy(update={"who": ai_agent}) for a in authored.agent]
        provenances.append(
            authored.model_copy(update={"target": [Reference(reference=NOTE)], "agent": agents})
        )
    if provenances:
        steps.append(AddProvenances(tuple(provenances)))
    return tuple(steps)


def write_plan(
    resources: DraftResources,
    note: DraftNote,
    capability: Capability,
    granted_scopes: str,
    *,
    key: str,
    at: datetime,
    forced: Strategy | None = None,
    written_before: WrittenCopy | None = None,
) -> WritePlan:
    """How to bring the EHR's copy up to this draft (signed when ``note.signed_by``): first
    written, or updated where ``written_before`` (kept in the strategy it was written in)."""
    strategy = choose_strategy(capability, granted_scopes, forced)
    if written_before is not None and written_before.strategy != strategy:
        strategy = written_before.strategy
    if strategy == "none" or (strategy == "final-only" and not note.signed_by):
        return WritePlan(strategy)
    with_provenance = capability.allows("Provenance", granted_scopes)
    as_document = _document_plan(resources, note, key, with_provenance, written_before, at)
    if strategy != "composition":
        return WritePlan(strategy, as_document)
    steps = _composition_plan(resources, granted_scopes, key, with_provenance, written_before)
    if not granted(granted_scopes, "DocumentReference", "c", restricted_ok=True):
        return WritePlan(strategy, steps)
    fallback = _document_plan(resources, note, key, with_provenance, None, at)
    return WritePlan(
        strategy, steps, COMPOSITION_REFUSED, WritePlan(Strategy.DOCUMENT_REFERENCE, fallback)
    )
