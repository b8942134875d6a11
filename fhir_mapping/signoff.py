"""Sign-off in FHIR terms: the final Composition with its legal attester, and a verifier Provenance.

Only a physician's signature makes a draft final; these functions shape that event, the web layer
decides whether it may happen. The verifier Provenance sits beside the drafting software's
Provenances, so a reader sees both who wrote each section and who vouched for the whole.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fhir.resources.R4B.bundle import Bundle

SIGNED_TITLE = "Discharge summary (AI-drafted; reviewed and signed by the attending physician)"
PARTICIPANT_TYPE = "http://terminology.hl7.org/CodeSystem/provenance-participant-type"
DOCUMENT_COMPLETION = "http://terminology.hl7.org/CodeSystem/v3-DocumentCompletion"


def _instant(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("a signature time needs a time zone: FHIR instants carry one")
    return at.isoformat()


def signed_composition(
    composition: dict[str, Any], practitioner: str, at: datetime
) -> dict[str, Any]:
    """The Composition as signed: ``final``, attested (mode legal) by ``practitioner`` at ``at``."""
    return composition | {
        "status": "final",
        "title": SIGNED_TITLE,
        "attester": [{"mode": "legal", "time": _instant(at), "party": {"reference": practitioner}}],
    }


def verifier_provenance(target: str, practitioner: str, at: datetime) -> dict[str, Any]:
    """The practitioner verified and legally authenticated ``target``."""
    return {
        "resourceType": "Provenance",
        "target": [{"reference": target}],
        "recorded": _instant(at),
        "activity": {
            "coding": [
                {"system": DOCUMENT_COMPLETION, "code": "LA", "display": "legally authenticated"}
            ]
        },
        "agent": [
            {
                "type": {
                    "coding": [
                        {"system": PARTICIPANT_TYPE, "code": "verifier", "display": "Verifier"}
                    ]
                },
                "who": {"reference": practitioner},
            }
        ],
    }


def signed_bundle(bundle: dict[str, Any], practitioner: str, at: datetime) -> dict[str, Any]:
    """The draft's transaction Bundle after sign-off: the Composition final, a verifier added."""
    entries = []
    composition_url = ""
    for entry in bundle["entry"]:
        resource = entry["resource"]
        if resource["resourceType"] == "Composition":
            composition_url = entry["fullUrl"]
            resource = signed_composition(resource, practitioner, at)
        entries.append(entry | {"resource": resource})
    if not composition_url:
        raise ValueError("the bundle holds no Composition to sign")
    entries.append(
        {
            "fullUrl": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, composition_url + '#verifier')}",
            "resource": verifier_provenance(composition_url, practitioner, at),
            "request": {"method": "POST", "url": "Provenance"},
        }
    )
    signed = bundle | {"entry": entries}
    Bundle.model_validate(signed)
    return signed
