"""Writing the draft back to the EHR, once, in the form the EHR takes.

Strategy (ARCHITECTURE.md), from the CapabilityStatement and the granted scopes unless a per-server
setting forces one: a Composition where the server creates them; else a DocumentReference with
``docStatus=preliminary``; where the server takes only ``final`` notes, nothing before sign-off;
Provenance where allowed. An EHR that refuses the Composition it advertised (403, 405, 422) gets a
DocumentReference instead, and the AI Device is created only after the EHR has taken the note, so
a refusal leaves nothing orphaned. A grant without write scopes drafts all the same: the write-back
is recorded as not permitted by the EHR. Idempotency: the key (this installation, patient,
encounter, draft version) is the resources' identifier and the write-back row's unique key;
creates use ``If-None-Exist``, so a retried or duplicated job finds what it wrote instead of
writing it again, and two installations on one EHR never adopt each other's notes.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import select

from fhir_mapping.composition import DRAFT_KEY_SYSTEM, TARGET_ELEMENT
from fhir_mapping.document_reference import draft_document_reference
from fhir_mapping.references import rewrite_references
from fhir_mapping.signoff import verifier_provenance
from smartapp.core.db import Database, DraftRow, WriteBackRow
from smartapp.core.statuses import WriteBackStatus
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.ehr.scopes import granted

Strategy = Literal["composition", "document-reference", "final-only", "none"]
KEY_SYSTEM = DRAFT_KEY_SYSTEM
ACCEPTED_STATUS = "https://provenote.dev/fhir/StructureDefinition/document-status-accepted"
# Answers by which an EHR refuses a Composition it advertised: try a DocumentReference instead.
COMPOSITION_REFUSED = frozenset({403, 405, 422})
# Write-back outcomes that are final for a draft version (nothing to retry).
# What a write-back status means, for people.
WRITE_BACK_WORDS = {
    WriteBackStatus.DONE: "written to the EHR",
    WriteBackStatus.DEFERRED: "deferred until sign-off (the EHR takes final notes only)",
    WriteBackStatus.NOT_PERMITTED: "not permitted by the EHR",
    WriteBackStatus.USER_MAY_NOT_WRITE: (
        "not written: the launching user may not write to the chart"
    ),
    WriteBackStatus.SIGNED: "signed copy written",
}
# (type, id, version) of the remote copy when nothing was written.
NOTHING_WRITTEN = (None, None, None)
# Every write-back status is settled: nothing is retried once recorded.
SETTLED = frozenset(WriteBackStatus)


@dataclass(frozen=True, slots=True)
class Write:
    """How this installation writes: its id (part of every identifier) and, per EHR, a forced
    strategy, and whether the launch behind the write may write to the chart at all."""

    installation: str
    forced: str | None = None
    permitted: bool = True


def idempotency_key(installation: str, patient: str, encounter: str, version: int) -> str:
    text = f"{installation}|{patient}|{encounter}|{version}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def choose_strategy(statement: dict[str, Any], scope: str, forced: str | None = None) -> Strategy:
    if forced:
        return forced  # type: ignore[return-value]
    creatable: dict[str, dict[str, Any]] = {}
    for rest in statement.get("rest", []):
        for resource in rest.get("resource", []):
            codes = {i.get("code") for i in resource.get("interaction", [])}
            if "create" in codes:
                creatable[resource.get("type", "")] = resource
    if "Composition" in creatable and granted(scope, "Composition", "c", restricted_ok=True):
        return "composition"
    document = creatable.get("DocumentReference")
    if document is not None and granted(scope, "DocumentReference", "c", restricted_ok=True):
        accepted = [
            e.get("valueCode")
            for e in document.get("extension", [])
            if e.get("url") == ACCEPTED_STATUS
        ]
        return "final-only" if accepted and "preliminary" not in accepted else "document-reference"
    return "none"


def _provenance_allowed(statement: dict[str, Any], scope: str) -> bool:
    return granted(scope, "Provenance", "c", restricted_ok=True) and any(
        resource.get("type") == "Provenance"
        and any(i.get("code") == "create" for i in resource.get("interaction", []))
        for rest in statement.get("rest", [])
        for resource in rest.get("resource", [])
    )


def _identifier(key: str) -> dict[str, str]:
    return {"system": KEY_SYSTEM, "value": key}


async def _create_or_update(
    client: FhirClient,
    resource: dict[str, Any],
    key: str,
    written_before: WriteBackRow | None,
) -> dict[str, Any]:
    """Update the copy written before, ``If-Match`` the version we wrote (so a copy changed in
    the EHR meanwhile is refused with 412, not overwritten); else create it once."""
    if written_before is not None and written_before.remote_id:
        version = written_before.remote_version
        return await client.update(
            resource | {"id": written_before.remote_id},
            if_match=f'W/"{version}"' if version else None,
        )
    return await client.create(resource, if_none_exist=f"identifier={KEY_SYSTEM}|{key}")


async def _write_composition(
    client: FhirClient,
    draft: DraftRow,
    key: str,
    scope: str,
    with_provenance: bool,
    written_before: WriteBackRow | None = None,
) -> tuple[str, str, str | None]:
    """Create the Composition (its Device contained), or update the copy written before
    (``If-Match`` its version); only then the Device and the Provenances that name it."""
    by_url = {entry["fullUrl"]: entry["resource"] for entry in draft.bundle["entry"]}
    device_url, device = next((u, r) for u, r in by_url.items() if r["resourceType"] == "Device")
    composition_url, composition = next(
        (u, r) for u, r in by_url.items() if r["resourceType"] == "Composition"
    )
    composition = rewrite_references(
        composition | {"contained": [device | {"id": "device"}]}, {device_url: "#device"}
    ) | {"identifier": _identifier(key)}
    written = await _create_or_update(client, composition, key, written_before)
    target = f"Composition/{written['id']}"
    if with_provenance:
        targets = {composition_url: target}
        if granted(scope, "Device", "c", restricted_ok=True):
            identifier = device["identifier"][0]
            written_device = await client.create(
                device, if_none_exist=f"identifier={identifier['system']}|{identifier['value']}"
            )
            targets[device_url] = f"Device/{written_device['id']}"
        provenances = [
            rewrite_references(
                r if device_url in targets else r | {"contained": [device | {"id": "device"}]},
                targets | ({} if device_url in targets else {device_url: "#device"}),
            )
            for r in by_url.values()
            if r["resourceType"] == "Provenance"
        ]
        await _create_missing_provenances(client, provenances, target)
    return "Composition", written["id"], written.get("meta", {}).get("versionId")


async def _create_missing_provenances(
    client: FhirClient, provenances: list[dict[str, Any]], target: str
) -> None:
    existing = (await client.search("Provenance", {"target": target})).resources
    written = {
        extension.get("valueUri")
        for provenance in existing
        for item in provenance.get("target", [])
        for extension in item.get("extension", [])
        if extension.get("url") == TARGET_ELEMENT
    }
    for provenance in provenances:
        element = provenance["target"][0].get("extension", [{}])[0].get("valueUri")
        if element not in written:
            await client.create(provenance)


async def _write_document_reference(
    client: FhirClient,
    draft: DraftRow,
    key: str,
    with_provenance: bool,
    written_before: WriteBackRow | None = None,
) -> tuple[str, str, str | None]:
    """Create the note (``preliminary`` until signed, then ``final``), or update the copy
    written before (``If-Match`` its version)."""
    resource = draft_document_reference(
        text=draft.markdown,
        patient=f"Patient/{draft.patient}",
        encounter=f"Encounter/{draft.encounter}" if draft.encounter else None,
        identifier=_identifier(key),
        doc_status="final" if draft.signed_by else "preliminary",
        date=datetime.now(UTC),
        signed_by=draft.signed_by,
    )
    written = await _create_or_update(client, resource, key, written_before)
    target = f"DocumentReference/{written['id']}"
    if with_provenance and draft.signed_by and draft.signed_at:
        await _create_missing_provenances(
            client, [verifier_provenance(target, draft.signed_by, draft.signed_at)], target
        )
    if with_provenance:
        composition_provenance = next(
            (
                e["resource"]
                for e in draft.bundle["entry"]
                if e["resource"]["resourceType"] == "Provenance"
            ),
            None,
        )
        if composition_provenance is not None:
            provenance = composition_provenance | {"target": [{"reference": target}]}
            provenance["agent"] = [
                agent | {"who": {"display": "Provenote AI drafting software"}}
                for agent in provenance["agent"]
            ]
            await _create_missing_provenances(client, [provenance], target)
    return "DocumentReference", written["id"], written.get("meta", {}).get("versionId")


async def recorded(database: Database, key: str) -> WriteBackRow | None:
    async with database.sessions() as session:
        return (
            await session.execute(select(WriteBackRow).where(WriteBackRow.idempotency_key == key))
        ).scalar_one_or_none()


async def _record(
    database: Database,
    draft: DraftRow,
    key: str,
    target: str,
    strategy: Strategy,
    status: WriteBackStatus,
    remote: tuple[str | None, str | None, str | None],
) -> WriteBackRow:
    """Store the outcome of a write under its idempotency key (one row per key)."""
    async with database.sessions() as session, session.begin():
        row = (
            await session.execute(select(WriteBackRow).where(WriteBackRow.idempotency_key == key))
        ).scalar_one_or_none()
        if row is None:
            row = WriteBackRow(id=str(uuid.uuid4()), draft_id=draft.id, idempotency_key=key)
            session.add(row)
        row.target = target
        row.strategy = strategy
        row.status = status
        row.remote_type, row.remote_id, row.remote_version = remote
        row.error = None
    return row


async def _write(
    client: FhirClient,
    draft: DraftRow,
    key: str,
    scope: str,
    strategy: Strategy,
    with_provenance: bool,
    written_before: WriteBackRow | None,
) -> tuple[Strategy, tuple[str | None, str | None, str | None]]:
    """Write by ``strategy``; a Composition the EHR refuses becomes a DocumentReference."""
    if strategy == "composition":
        try:
            return strategy, await _write_composition(
                client, draft, key, scope, with_provenance, written_before
            )
        except FhirError as refused:
            if refused.status not in COMPOSITION_REFUSED or not granted(
                scope, "DocumentReference", "c", restricted_ok=True
            ):
                raise
            strategy, written_before = "document-reference", None
    if strategy in {"document-reference", "final-only"}:
        return strategy, await _write_document_reference(
            client, draft, key, with_provenance, written_before
        )
    return strategy, (None, None, None)


async def write_back(
    database: Database,
    client: FhirClient,
    draft: DraftRow,
    scope: str,
    write: Write,
) -> WriteBackRow:
    """Write ``draft`` to its EHR by the chosen strategy; the recorded outcome either way."""
    key = idempotency_key(write.installation, draft.patient, draft.encounter, draft.version)
    row = await recorded(database, key)
    if row is not None and row.status in SETTLED:
        return row
    if not write.permitted:
        status = WriteBackStatus.USER_MAY_NOT_WRITE
        return await _record(database, draft, key, client.base, "none", status, NOTHING_WRITTEN)
    statement = await client.read_reference("metadata")
    strategy = choose_strategy(statement, scope, write.forced)
    if strategy == "none":
        status = WriteBackStatus.NOT_PERMITTED
        return await _record(database, draft, key, client.base, strategy, status, NOTHING_WRITTEN)
    if strategy == "final-only":
        status = WriteBackStatus.DEFERRED
        return await _record(database, draft, key, client.base, strategy, status, NOTHING_WRITTEN)
    provenance = _provenance_allowed(statement, scope)
    strategy, remote = await _write(client, draft, key, scope, strategy, provenance, None)
    return await _record(database, draft, key, client.base, strategy, WriteBackStatus.DONE, remote)


async def write_signed(
    database: Database,
    client: FhirClient,
    draft: DraftRow,
    scope: str,
    write: Write,
) -> WriteBackRow:
    """Bring the EHR's copy up to the signed draft: update what was written before, with
    ``If-Match`` so a copy changed in the EHR meanwhile is not overwritten (412), or, where the
    EHR takes only final notes or nothing was written yet, create it now."""
    key = idempotency_key(write.installation, draft.patient, draft.encounter, draft.version)
    before = await recorded(database, key)
    statement = await client.read_reference("metadata")
    strategy = choose_strategy(statement, scope, write.forced)
    provenance = _provenance_allowed(statement, scope)
    if before is not None and before.remote_id and before.strategy != strategy:
        strategy = before.strategy  # type: ignore[assignment]
    written_before = before if before is not None and before.strategy == strategy else None
    strategy, remote = await _write(client, draft, key, scope, strategy, provenance, written_before)
    status = WriteBackStatus.NOT_PERMITTED if strategy == "none" else WriteBackStatus.SIGNED
    return await _record(database, draft, key, client.base, strategy, status, remote)


async def remote_status(client: FhirClient, written: WriteBackRow) -> str | None:
    """The EHR copy's status (``final``, ``preliminary``…), or None when there is no copy."""
    if not written.remote_type or not written.remote_id:
        return None
    resource = await client.read(written.remote_type, written.remote_id)
    field = "docStatus" if written.remote_type == "DocumentReference" else "status"
    value = resource.get(field)
    return value if isinstance(value, str) else None
