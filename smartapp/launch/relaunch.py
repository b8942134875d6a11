"""What a launch opens: the stay's draft when there is one (written to the chart if it was made
ahead and never written, and compared with the record as it is now), else the stay's drafting
job, started or joined. A CDS Hooks card's ``appContext`` may name the stay."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any

from litestar.response import Redirect, Response

from fhir_mapping.resources import record_digest
from pipeline.errors import ProvenoteError
from smartapp.core.errors import LaunchError, logged
from smartapp.core.metrics import DRAFT_AGE_AT_LAUNCH, DRAFT_AT_LAUNCH
from smartapp.core.statuses import ACTIVE_JOB_STATES, DRAFTED_AHEAD, DraftStatus, JobState
from smartapp.core.tables import DraftRow, stored_utc, utcnow
from smartapp.ehr.fhir_client import FhirError
from smartapp.ehr.pull import pull_record
from smartapp.launch.roles import may_review
from smartapp.launch.sessions import LaunchContext
from smartapp.state import AppState, Jobs


def _named_stay(context: LaunchContext) -> dict[str, str]:
    """What a CDS Hooks card's link named (its appContext): ``{"draft": id}`` or ``{"job": id}``;
    anything else names nothing."""
    try:
        named = json.loads(context.app_context or "{}")
    except ValueError:
        return {}
    if not isinstance(named, dict):
        return {}
    return {
        key: value
        for key, value in named.items()
        if key in {"draft", "job"} and isinstance(value, str)
    }


async def _card_context(provenote: AppState, jobs: Jobs, context: LaunchContext) -> LaunchContext:
    """The launch context, with the stay a card's link named when the EHR launched without an
    encounter: only a draft or job of this issuer's patient is taken (appContext is the EHR's
    word, but never lets a launch open another patient's draft)."""
    named = _named_stay(context)
    if context.encounter or not named:
        return context
    found = (
        await provenote.drafts.get(named["draft"])
        if "draft" in named
        else await jobs.get(named["job"])
    )
    if found is None or found.iss != context.iss or found.patient != context.patient:
        return context
    return context.model_copy(update={"encounter": found.encounter or None})


async def _write_held_draft(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext, draft: DraftRow
) -> None:
    """A draft made ahead (its job, done, never wrote) is written to the chart when a physician
    first opens it, with their grant; a failure leaves it unwritten, to be written at the next
    opening. Any other draft is its own job's to write."""
    job = await jobs.get(draft.job_id)
    if job is None or job.origin not in DRAFTED_AHEAD or job.state != JobState.DONE:
        return
    client = provenote.access.client_for(session_id, context.iss)
    try:
        await provenote.drafts.write_unwritten(
            client,
            draft,
            context.scope,
            provenote.installation,
            provenote.settings.writeback_strategies.get(draft.iss),
            context.fhir_user or "physician launch",
        )
    except (FhirError, LaunchError, ProvenoteError) as failure:
        logged("writing a draft made ahead at its opening", type(failure).__name__)


def _beside(provenote: AppState, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` beside the answer, kept until it ends."""
    task = asyncio.create_task(work)
    provenote.record_checks.add(task)
    task.add_done_callback(provenote.record_checks.discard)


async def open_or_draft(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext
) -> Response[Any]:
    """A stay that has a draft opens it, with its review as left (relaunching drafts nothing
    again, and writes only a draft made ahead that was never written; "Draft again" on the
    draft asks for a new version); any other launch starts the stay's drafting job, or joins
    the one under way (one a CDS hook or pre-drafting started included)."""
    named = await _card_context(provenote, jobs, context)
    if named is not context:
        await provenote.store.update_context(session_id, named)
        context = named
    patient = context.patient
    if not patient:
        return Redirect("/", status_code=302)
    existing = await provenote.drafts.latest_for_stay(context.iss, patient, context.encounter)
    if existing is not None:
        if existing.status == DraftStatus.PRELIMINARY:
            DRAFT_AT_LAUNCH.labels("ready").inc()
            waited = (utcnow() - stored_utc(existing.created_at)).total_seconds()
            DRAFT_AGE_AT_LAUNCH.observe(max(0.0, waited))
            _beside(provenote, _compare_record(provenote, jobs, session_id, context, existing))
            if may_review(provenote.settings, context):
                _beside(
                    provenote, _write_held_draft(provenote, jobs, session_id, context, existing)
                )
        return Redirect(f"/drafts/{existing.id}", status_code=302)
    under_way = await jobs.latest_for(context.iss, patient, context.encounter)
    drafting = under_way is not None and under_way.state in ACTIVE_JOB_STATES
    DRAFT_AT_LAUNCH.labels("drafting" if drafting else "none").inc()
    await jobs.submit(
        context.iss,
        patient,
        context.encounter,
        session_id=session_id,
        may_write=may_review(provenote.settings, context),
    )
    return Redirect("/", status_code=302)


async def _compare_record(
    provenote: AppState, jobs: Jobs, session_id: str, context: LaunchContext, draft: DraftRow
) -> None:
    """Pull the stay again, beside the opened draft, and note whether the record changed since
    the draft was made (compared by digest): the review then offers "Draft again" first. A
    failure only leaves the question open; the physician can always draft again."""
    job = await jobs.get(draft.job_id)
    if job is None or job.record is None or not context.patient:
        return
    client = provenote.access.client_for(session_id, context.iss)
    try:
        record = await pull_record(client, context.patient, job.encounter, jobs.pull_bounds)
    except (FhirError, LaunchError) as failure:
        logged("comparing the record at a relaunch", type(failure).__name__)
        return
    changed = record_digest(record) != record_digest(job.record)
    provenote.record_changed[draft.id] = changed
