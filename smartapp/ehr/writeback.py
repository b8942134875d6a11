"""Writing a draft to the EHR: the steps of a ``fhir_mapping.write_plan`` executed over HTTP.

The plan decides (pure, tested without a server); this module only sends it, binding the ids the
EHR assigns to the plan's placeholders as it goes, and answers what was written. Recording the
outcome is the drafts slice's (``smartapp.drafts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fhir.resources.R4B.provenance import Provenance
from pydantic import ValidationError

from fhir_mapping.json_values import as_json
from fhir_mapping.references import rewrite_references
from fhir_mapping.write_plan import (
    DEVICE,
    NOTE,
    AddProvenances,
    CreateDevice,
    WriteNote,
    WritePlan,
    provenance_key,
)
from fhir_mapping.write_strategy import Strategy
from smartapp.ehr.fhir_client import FhirClient, FhirError


@dataclass(frozen=True, slots=True)
class Written:
    """What the EHR holds after a plan ran: the strategy used and the note's copy, if any."""

    strategy: Strategy
    remote_type: str | None = None
    remote_id: str | None = None
    remote_version: str | None = None


async def _write_note(client: FhirClient, step: WriteNote) -> dict[str, Any]:
    if step.update is not None:
        version = step.update.version
        return await client.update(
            as_json(step.resource) | {"id": step.update.resource_id},
            if_match=f'W/"{version}"' if version else None,
        )
    return await client.create(as_json(step.resource), if_none_exist=step.condition)


def written_provenance_keys(existing: list[dict[str, Any]]) -> set[str]:
    """What the Provenances already on the note record; one that does not validate is not one
    Provenote wrote (it writes only valid ones) and is left out."""
    keys = set()
    for found in existing:
        try:
            keys.add(provenance_key(Provenance.model_validate(found)))
        except ValidationError:
            continue
    return keys


async def _add_provenances(client: FhirClient, step: AddProvenances, bound: dict[str, str]) -> None:
    on_the_note = await client.search("Provenance", {"target": bound[NOTE]})
    present = written_provenance_keys(on_the_note.resources)
    for provenance in step.provenances:
        if provenance_key(provenance) not in present:
            await client.create(as_json(rewrite_references(provenance, bound)))


async def execute(client: FhirClient, plan: WritePlan) -> Written:
    """Run ``plan``; the note refused with one of ``plan.refused`` runs ``plan.otherwise``."""
    bound: dict[str, str] = {}
    written = Written(plan.strategy)
    for step in plan.steps:
        if isinstance(step, WriteNote):
            try:
                answer = await _write_note(client, step)
            except FhirError as refused:
                if plan.otherwise is None or refused.status not in plan.refused or bound:
                    raise
                return await execute(client, plan.otherwise)
            bound[NOTE] = f"{step.resource_type}/{answer['id']}"
            version = answer.get("meta", {}).get("versionId")
            written = Written(plan.strategy, step.resource_type, answer["id"], version)
        elif isinstance(step, CreateDevice):
            answer = await client.create(as_json(step.resource), if_none_exist=step.condition)
            bound[DEVICE] = f"Device/{answer['id']}"
        else:
            await _add_provenances(client, step, bound)
    return written


async def remote_status(client: FhirClient, resource_type: str, resource_id: str) -> str | None:
    """The EHR copy's status (``final``, ``preliminary``…)."""
    resource = await client.read(resource_type, resource_id)
    value = resource.get("docStatus" if resource_type == "DocumentReference" else "status")
    return value if isinstance(value, str) else None
