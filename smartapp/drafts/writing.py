"""A draft written to its EHR: the plan (``fhir_mapping.write_plan``), its execution
(``smartapp.ehr.writeback``) and the recorded outcome, once per draft version.

A grant without write scopes drafts all the same: the write-back is recorded as not permitted by
the EHR. Every recorded outcome is settled: a retried or duplicated job finds it and writes
nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from fhir_mapping.draft_resources import draft_resources, stored_draft
from fhir_mapping.write_plan import DraftNote, WrittenCopy, idempotency_key, write_plan
from fhir_mapping.write_strategy import (
    Capability,
    Strategy,
    as_strategy,
    choose_strategy,
    why_nothing_is_written,
)
from smartapp.core.db import Database
from smartapp.core.statuses import DraftStatus, WriteBackStatus
from smartapp.core.tables import DraftRow, WriteBackRow
from smartapp.drafts.store import (
    earlier_version,
    record_write_back,
    signed_version,
    write_back_by_key,
    write_back_of,
)
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.writeback import Written, execute

# What a write-back status means, for people.
WRITE_BACK_WORDS = {
    WriteBackStatus.DONE: "written to the EHR",
    WriteBackStatus.DEFERRED: "deferred until sign-off (the EHR takes final notes only)",
    WriteBackStatus.NOT_PERMITTED: "not permitted by the EHR",
    WriteBackStatus.NOT_ACCEPTED: "not written: this EHR does not accept notes from apps",
    WriteBackStatus.DISABLED: "not written: Provenote is configured not to write to this EHR",
    WriteBackStatus.USER_MAY_NOT_WRITE: (
        "not written: the launching user may not write to the chart"
    ),
    WriteBackStatus.SIGNED: "signed copy written",
    WriteBackStatus.HELD_SIGNED: (
        "not written: the stay already has a signed summary, which a new draft never replaces"
    ),
}
NOTHING_WRITTEN = {
    "configured": WriteBackStatus.DISABLED,
    "not-accepted": WriteBackStatus.NOT_ACCEPTED,
    "not-permitted": WriteBackStatus.NOT_PERMITTED,
}
NOTHING_WRITTEN_WORDS = {
    "configured": "Provenote is configured not to write to this EHR",
    "not-accepted": "this EHR does not accept notes from apps",
    "not-permitted": "the EHR did not grant Provenote permission to write notes",
}
# Every write-back status is settled: nothing is retried once recorded.
SETTLED = frozenset(WriteBackStatus)


@dataclass(frozen=True, slots=True)
class Write:
    """How this installation writes: its id (part of every identifier) and, per EHR, a forced
    strategy, and whether the launch behind the write may write to the chart at all."""

    installation: str
    forced: Strategy | None = None
    permitted: bool = True


def draft_key(draft: DraftRow, installation: str) -> str:
    return idempotency_key(installation, draft.patient, draft.encounter, draft.version)


def _note(draft: DraftRow) -> DraftNote:
    return DraftNote(
        markdown=draft.markdown,
        patient=draft.patient,
        encounter=draft.encounter or None,
        signed_by=draft.signed_by,
        signed_at=draft.signed_at,
    )


def _copy(row: WriteBackRow | None) -> WrittenCopy | None:
    """What an earlier write left in the EHR, if it left anything."""
    strategy = as_strategy(row.strategy) if row is not None else None
    if row is None or not row.remote_id or strategy is None:
        return None
    return WrittenCopy(strategy, row.remote_id, row.remote_version)


async def capability_of(client: FhirClient) -> Capability:
    """What the EHR says it takes (its CapabilityStatement)."""
    return Capability.from_statement(await client.read_reference("metadata"))


@dataclass(frozen=True, slots=True)
class SignOutcome:
    """What signing will do to the EHR's copy, in words, before the physician confirms."""

    words: str
    writes: bool


async def sign_outcome(
    database: Database, client: FhirClient, draft: DraftRow, scope: str, write: Write
) -> SignOutcome:
    """What ``write_signed`` would do now: replace the copy written before, write a new note,
    or nothing (and why), from the same plan it will follow."""
    before = await write_back_by_key(database, draft_key(draft, write.installation))
    copy = _copy(before)
    if copy is not None and before is not None:
        return SignOutcome(
            f"the EHR's copy {before.remote_type}/{copy.resource_id}, replaced by the signed "
            "version",
            True,
        )
    capability = await capability_of(client)
    forced = write.forced
    strategy = choose_strategy(capability, scope, forced)
    if strategy == "none":
        reason = why_nothing_is_written(capability, scope, forced)
        return SignOutcome(f"nothing: {NOTHING_WRITTEN_WORDS[reason]}", False)
    kind = "Composition" if strategy == "composition" else "DocumentReference"
    return SignOutcome(f"a new note in the EHR (a final {kind})", True)


async def _write(
    database: Database,
    client: FhirClient,
    draft: DraftRow,
    scope: str,
    write: Write,
    before: WriteBackRow | None,
) -> WriteBackRow:
    key = draft_key(draft, write.installation)
    capability = await capability_of(client)
    plan = write_plan(
        draft_resources(stored_draft(draft.bundle)),
        _note(draft),
        capability,
        scope,
        key=key,
        at=datetime.now(UTC),
        forced=write.forced,
        written_before=_copy(before),
    )
    if plan.strategy == "none":
        status = NOTHING_WRITTEN[why_nothing_is_written(capability, scope, write.forced)]
    elif not plan.steps:
        status = WriteBackStatus.DEFERRED
    else:
        status = WriteBackStatus.SIGNED if draft.signed_by else WriteBackStatus.DONE
    written = await execute(client, plan)
    return await record_write_back(database, draft.id, key, client.base, status, written)


async def write_back(
    database: Database, client: FhirClient, draft: DraftRow, scope: str, write: Write
) -> WriteBackRow:
    """Write ``draft`` to its EHR by the chosen strategy; the recorded outcome either way."""
    key = draft_key(draft, write.installation)
    row = await write_back_by_key(database, key)
    if row is not None and row.status in SETTLED:
        return row
    if not write.permitted:
        refused = WriteBackStatus.USER_MAY_NOT_WRITE
        return await record_write_back(
            database, draft.id, key, client.base, refused, Written(Strategy.NONE)
        )
    if await signed_version(database, draft) is not None:
        held = WriteBackStatus.HELD_SIGNED
        return await record_write_back(
            database, draft.id, key, client.base, held, Written(Strategy.NONE)
        )
    return await _write(database, client, draft, scope, write, await _replaced(database, draft))


async def _replaced(database: Database, draft: DraftRow) -> WriteBackRow | None:
    """The EHR's preliminary copy of the stay's earlier version, which a new version replaces
    in place (``If-Match``), so the chart holds one AI note per stay; None when there is none."""
    earlier = await earlier_version(database, draft)
    if earlier is None or earlier.status != DraftStatus.SUPERSEDED:
        return None
    written = await write_back_of(database, earlier.id)
    if written is None or written.status != WriteBackStatus.DONE or not written.remote_id:
        return None
    return written


async def write_signed(
    database: Database, client: FhirClient, draft: DraftRow, scope: str, write: Write
) -> WriteBackRow:
    """Bring the EHR's copy up to the signed draft: update what was written before, with
    ``If-Match`` so a copy changed in the EHR meanwhile is not overwritten (412), or, where the
    EHR takes only final notes or nothing was written yet, create it now."""
    before = await write_back_by_key(database, draft_key(draft, write.installation))
    return await _write(database, client, draft, scope, write, before)
