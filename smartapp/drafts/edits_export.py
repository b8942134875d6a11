"""Every physician edit as a record: the data a team needs to measure and improve drafting.

Each record says which draft and section, the sentence before and after, what it cited (the
facts and the resources behind them), how the checker judged it as drafted and after the edit,
when, and who, as a pseudonym: a keyed hash (HMAC-SHA-256, whole) of the user's FHIR identity
under a secret of its own, stable across drafts (edits by one physician can be grouped) but not
reversible without it. Like expert-corrected "golden" summaries, accepted sentences are records
too: an accept says the draft was right.

The patient's direct identifiers (names, date of birth, record numbers and other identifiers,
the Patient's id) are replaced by placeholders in every record unless the export is asked for
them (``--with-identifiers``), so the file can leave the clinical systems.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import undefer

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence, Summary, cited_sources
from smartapp.core.db import Database
from smartapp.core.tables import DraftEditRow, DraftRow
from smartapp.drafts.pages import patient_banner


def editor_pseudonym(secret: bytes, actor: str) -> str:
    """A stable pseudonym for a user: the same person, the same id, in every export."""
    return "editor-" + hmac.new(secret, actor.encode("utf-8"), hashlib.sha256).hexdigest()


def identifiers_of(state: EvidenceState | None, patient: str) -> dict[str, str]:
    """The patient's direct identifiers as they can appear in a sentence, with the placeholder
    each becomes (longest first, so a full name goes before its parts)."""
    found: dict[str, str] = {f"Patient/{patient}": "Patient/[id]", patient: "[patient id]"}
    info = patient_banner(state) if state is not None else None
    if info is not None:
        names = [info.name or "", *(" ".join([*n.given, n.family or ""]) for n in info.names)]
        for name in names:
            found[name.strip()] = "[name]"
        for person in info.names:
            for part in [*person.given, person.family or ""]:
                found[part] = "[name]"
        if info.birth_date is not None:
            found[info.birth_date.isoformat()] = "[date of birth]"
        for identifier in [*info.identifiers, info.mrn or ""]:
            found[identifier] = "[identifier]"
    usable = {text: mark for text, mark in found.items() if len(text.strip()) >= 2}
    return dict(sorted(usable.items(), key=lambda item: -len(item[0])))


def _without(value: Any, identifiers: dict[str, str]) -> Any:
    """``value`` (text, or lists and dicts of it) with each identifier replaced, whole words."""
    if isinstance(value, str):
        for text, mark in identifiers.items():
            value = re.sub(rf"(?<!\w){re.escape(text)}(?!\w)", mark, value)
        return value
    if isinstance(value, list):
        return [_without(item, identifiers) for item in value]
    if isinstance(value, dict):
        return {key: _without(item, identifiers) for key, item in value.items()}
    return value


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
    with_identifiers: bool = False,
) -> dict[str, Any]:
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
    if with_identifiers:
        return record
    cleaned: dict[str, Any] = _without(record, identifiers_of(state, draft.patient))
    return cleaned | {
        "editor": record["editor"],
        "at": record["at"],
    }


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
    current: tuple[DraftRow, Summary | None, EvidenceState | None] | None = None
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
            current = (draft, summary, state)
        draft, summary, state = current
        sentence = _sentence(edit, summary)
        yield edit_record(edit, draft, sentence, state, secret, with_identifiers)
