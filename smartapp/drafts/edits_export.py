"""Every physician edit as a record: the data a team needs to measure and improve drafting.

Each record says which draft and section, the sentence before and after, what it cited (the
facts and the resources behind them), how the checker judged it as drafted and after the edit,
when, and who, as a pseudonym: a keyed hash (HMAC-SHA-256, whole) of the user's FHIR identity
under a secret of its own, stable across drafts (edits by one physician can be grouped) but not
reversible without it. Like expert-corrected "golden" summaries, accepted sentences are records
too: an accept says the draft was right.

Every record is de-identified by what its text is (``smartapp.drafts.deidentify``: the patient's
and relatives' names and contact details, identifiers, ids by pseudonym, dates shifted per
patient) unless the export is asked for identifiers (``--with-identifiers``), so the file can
leave the clinical systems.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import undefer

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence, Summary, cited_sources
from smartapp.core.db import Database
from smartapp.core.tables import DraftEditRow, DraftRow, JobRow
from smartapp.drafts.deidentify import Deidentifier, patient_deidentifier


def editor_pseudonym(secret: bytes, actor: str) -> str:
    """A stable pseudonym for a user: the same person, the same id, in every export."""
    return "editor-" + hmac.new(secret, actor.encode("utf-8"), hashlib.sha256).hexdigest()


def _sentence(edit: DraftEditRow, summary: Summary | None) -> Sentence | None:
    """The sentence as drafted: kept with the edit, else (older edits) looked up in the draft."""
    if edit.drafted is not None:
        try:
            return Sentence.model_validate(edit.drafted)
        except ValidationError:
            return None
    if summary is None:
        return None
    found = [s for s in summary.sentences() if s.id == edit.sentence_id]
    return found[0] if found else None


def _verdicts(sentence: Sentence) -> dict[str, Any]:
    return {
        "grounding": sentence.grounding,
        "entailment": sentence.entailment,
        "checks": [{"check": c.check, "passed": c.passed} for c in sentence.checks],
        "flags": [flag.code for flag in sentence.flags],
    }


def edit_record(
    edit: DraftEditRow,
    draft: DraftRow,
    sentence: Sentence | None,
    state: EvidenceState | None,
    secret: bytes,
    deidentifier: Deidentifier | None = None,
) -> dict[str, Any]:
    """One edit as a record; de-identified by ``deidentifier`` unless it is None (the export
    asked for identifiers)."""
    cited: list[str] = []
    if sentence is not None and state is not None:
        try:
            cited = sorted({ref.resource for ref in cited_sources(sentence, state)})
        except KeyError:  # a citation of a fact the stored evidence no longer has
            cited = []
    record = {
        "draft": draft.id,
        "draft_version": draft.version,
        "encounter": draft.encounter,
        "revision": edit.revision,
        "section": sentence.section if sentence is not None else None,
        "sentence": edit.sentence_id,
        "action": edit.action,
        "before": edit.before,
        "after": edit.after,
        "citations": sentence.citations if sentence is not None else [],
        "cited_resources": cited,
        "drafted_verdicts": _verdicts(sentence) if sentence is not None else None,
        "verdict_after": edit.verdict,
        "at": edit.at.isoformat(),
        "editor": editor_pseudonym(secret, edit.actor),
    }
    if deidentifier is None:
        return record
    record["encounter"] = deidentifier.pseudonym(draft.encounter) if draft.encounter else None
    cleaned: dict[str, Any] = deidentifier.value(record)
    return cleaned | {"editor": record["editor"]}


async def edit_records(
    database: Database,
    secret: bytes,
    since: datetime | None = None,
    *,
    with_identifiers: bool = False,
) -> AsyncIterator[dict[str, Any]]:
    """The records, draft by draft, each draft's in the order its edits were made (one draft's
    evidence in memory at a time)."""
    query = select(DraftEditRow).order_by(DraftEditRow.draft_id, DraftEditRow.id)
    if since is not None:
        query = query.where(DraftEditRow.at >= since)
    async with database.sessions() as session:
        edits = list((await session.execute(query)).scalars())
    current: tuple[DraftRow, Summary | None, EvidenceState | None, Deidentifier | None] | None
    current = None
    for edit in edits:
        if current is None or current[0].id != edit.draft_id:
            async with database.sessions() as session:
                draft = await session.get(
                    DraftRow,
                    edit.draft_id,
                    options=[undefer(DraftRow.summary), undefer(DraftRow.evidence)],
                )
            assert draft is not None  # draft_edits.draft_id is a foreign key
            summary = Summary.model_validate(draft.summary) if draft.summary else None
            state = EvidenceState.model_validate(draft.evidence) if draft.evidence else None
            deidentifier = (
                None
                if with_identifiers
                else patient_deidentifier(
                    secret, draft.patient, state, await _pulled_record(database, draft.job_id)
                )
            )
            current = (draft, summary, state, deidentifier)
        draft, summary, state, deidentifier = current
        sentence = _sentence(edit, summary)
        yield edit_record(edit, draft, sentence, state, secret, deidentifier)


async def _pulled_record(database: Database, job_id: str | None) -> dict[str, Any] | None:
    """The job's pulled record, while it is kept (``provenote purge`` removes it)."""
    if job_id is None:
        return None
    async with database.sessions() as session:
        record: dict[str, Any] | None = await session.scalar(
            select(JobRow.record).where(JobRow.id == job_id)
        )
    return record
