"""``DraftService``: the one door to drafts, their revisions, edits, write-backs, sign-off and
audit events. Controllers, jobs and the FHIR API go through it; no other slice touches those
tables (``tests/test_layering.py``)."""

from __future__ import annotations

from typing import Any

from fhir_mapping.hosted import served_device
from fhir_mapping.write_strategy import Strategy
from pipeline.evidence.summary import Sentence
from smartapp.core.db import Database
from smartapp.core.metrics import WRITE_BACKS
from smartapp.core.tables import AuditRow, DraftEditRow, DraftRevisionRow, DraftRow, WriteBackRow
from smartapp.drafts import review, signing, store, writing
from smartapp.drafts.store import DraftQuery, NewDraft
from smartapp.drafts.writing import Write
from smartapp.ehr.fhir_client import FhirClient


class DraftService:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def create(self, new: NewDraft) -> DraftRow:
        return await store.create_draft(self.database, new)

    async def of_job(self, job_id: str) -> DraftRow | None:
        return await store.draft_of_job(self.database, job_id)

    async def latest_for_stay(
        self, iss: str, patient: str, encounter: str | None
    ) -> DraftRow | None:
        return await store.latest_for_stay(self.database, iss, patient, encounter)

    async def note_record_changed(self, draft_id: str, changed: bool) -> None:
        """What a relaunch found: whether the EHR's record changed since the draft was made."""
        await store.note_record_changed(self.database, draft_id, changed)

    async def get(self, draft_id: str) -> DraftRow | None:
        """The draft as served (its bundle and status), without its summary and evidence."""
        return await store.get_draft(self.database, draft_id)

    async def load(self, draft_id: str) -> DraftRow | None:
        """The draft with the summary and evidence its review works on."""
        return await review.load(self.database, draft_id)

    async def revision(self, draft_id: str, revision: int) -> DraftRevisionRow | None:
        return await store.revision_of(self.database, draft_id, revision)

    async def search(
        self, query: DraftQuery, count: int, offset: int
    ) -> tuple[list[DraftRow], int]:
        return await store.search_drafts(self.database, query, count, offset)

    async def search_all(self, query: DraftQuery) -> list[DraftRow]:
        return await store.all_drafts(self.database, query)

    async def device(self, served_id: str) -> dict[str, Any] | None:
        """The AI Device served under ``served_id`` (the one that wrote some draft)."""
        async for bundle in store.draft_bundles(self.database):
            device = served_device(bundle, served_id)
            if device is not None:
                return device
        return None

    async def write_back_of(self, draft_id: str) -> WriteBackRow | None:
        return await store.write_back_of(self.database, draft_id)

    async def write_back(
        self, client: FhirClient, draft: DraftRow, scope: str, write: Write, actor: str
    ) -> WriteBackRow:
        """Write a new draft to its EHR once; the recorded outcome, counted and audited as
        done by ``actor``."""
        outcome = await writing.write_back(self.database, client, draft, scope, write)
        WRITE_BACKS.labels(outcome.strategy, outcome.status).inc()
        where = f"{outcome.strategy} at {outcome.target}"
        remote = f": {outcome.remote_type}/{outcome.remote_id}" if outcome.remote_id else ""
        await self.audit(actor, f"write_back_{outcome.status}", draft.id, where + remote)
        return outcome

    async def write_unwritten(
        self,
        client: FhirClient,
        draft: DraftRow,
        scope: str,
        installation: str,
        forced: Strategy | None,
        actor: str,
    ) -> WriteBackRow | None:
        """Write a draft that was never written (one made ahead, opened by a physician who may
        write); None when it already was."""
        if await self.write_back_of(draft.id) is not None:
            return None
        return await self.write_back(client, draft, scope, Write(installation, forced), actor)

    async def sign_outcome(
        self, client: FhirClient, draft: DraftRow, scope: str, write: Write
    ) -> writing.SignOutcome:
        """What signing ``draft`` would write to the EHR now, in words."""
        return await writing.sign_outcome(self.database, client, draft, scope, write)

    async def apply_review(self, asked: review.SentenceReview) -> tuple[DraftRow, Sentence | None]:
        return await review.apply_review(self.database, asked)

    async def edits(self, draft_id: str) -> list[DraftEditRow]:
        return await review.edits_of(self.database, draft_id)

    async def sign(
        self, client: FhirClient, draft_id: str, revision: int, signer: signing.Signer, write: Write
    ) -> DraftRow:
        return await signing.sign(self.database, client, draft_id, revision, signer, write)

    async def stale_claims(self, timeout_s: float) -> list[DraftRow]:
        return await signing.stale_claims(self.database, timeout_s)

    async def reconcile_claim(
        self, row: DraftRow, client: FhirClient | None, installation: str
    ) -> str:
        return await signing.reconcile_claim(self.database, row, client, installation)

    async def audit(self, actor: str, action: str, draft_id: str | None, detail: str) -> None:
        await store.audit(self.database, actor, action, draft_id, detail)

    async def of_jobs(self, job_ids: list[str]) -> dict[str, DraftRow]:
        return await store.drafts_of_jobs(self.database, job_ids)

    async def audit_trail(self, draft_id: str) -> list[AuditRow]:
        return await store.audit_trail(self.database, draft_id)
