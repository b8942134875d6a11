"""Sign-off in FHIR terms: the final Composition with its legal attester, and a verifier Provenance.

Only a physician's signature makes a draft final; these functions shape that event, the web layer
decides whether it may happen. The verifier Provenance sits beside the drafting software's
Provenances, so a reader sees both who wrote each section and who vouched for the whole.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.coding import Coding
from fhir.resources.R4B.composition import Composition, CompositionAttester
from fhir.resources.R4B.provenance import Provenance, ProvenanceAgent
from fhir.resources.R4B.reference import Reference

from fhir_mapping.composition import transaction_entry

SIGNED_TITLE = "Discharge summary (AI-drafted; reviewed and signed by the attending physician)"
PARTICIPANT_TYPE = "http://terminology.hl7.org/CodeSystem/provenance-participant-type"
DOCUMENT_COMPLETION = "http://terminology.hl7.org/CodeSystem/v3-DocumentCompletion"


def _zoned(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError("a signature time needs a time zone: FHIR instants carry one")
    return at


def signed_composition(composition: Composition, practitioner: str, at: datetime) -> Composition:
    """The Composition as signed: ``final``, attested (mode legal) by ``practitioner`` at ``at``."""
    attester = CompositionAttester(
        mode="legal", time=_zoned(at), party=Reference(reference=practitioner)
    )
    return composition.model_copy(
        update={"status": "final", "title": SIGNED_TITLE, "attester": [attester]}
    )


def verifier_provenance(target: str, practitioner: str, at: datetime) -> Provenance:
    """The practitioner verified and legally authenticated ``target``."""
    verifier = Coding(system=PARTICIPANT_TYPE, code="verifier", display="Verifier")
    authenticated = Coding(system=DOCUMENT_COMPLETION, code="LA", display="legally authenticated")
    return Provenance(
        target=[Reference(reference=target)],
        recorded=_zoned(at),
        activity=CodeableConcept(coding=[authenticated]),
        agent=[
            ProvenanceAgent(
                type=CodeableConcept(coding=[verifier]), who=Reference(reference=practitioner)
            )
        ],
    )


def signed_bundle(bundle: Bundle, practitioner: str, at: datetime) -> Bundle:
    """The draft's transaction Bundle after sign-off: the Composition final, a verifier added."""
    entries = []
    composition_url = ""
    for entry in bundle.entry or []:
        if isinstance(entry.resource, Composition):
            composition_url = entry.fullUrl or ""
            signed = signed_composition(entry.resource, practitioner, at)
            entry = entry.model_copy(update={"resource": signed})
        entries.append(entry)
    if not composition_url:
        raise ValueError("the bundle holds no Composition to sign")
    verifier_url = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, composition_url + '#verifier')}"
    entries.append(
        transaction_entry(verifier_url, verifier_provenance(composition_url, practitioner, at))
    )
    return bundle.model_copy(update={"entry": entries})
