"""Who may see what: a launch session for the patient and EHR a draft or job is about.

The guards find the session from its cookie and the record from the path, and keep what they
found on the request for the handler (``visible_draft``, ``visible_job``); anything else is
answered 404, so that a record of another patient is indistinguishable from none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency
from litestar.handlers.base import BaseRouteHandler

from pipeline.errors import ProvenoteError
from smartapp.access.sessions import LaunchContext
from smartapp.core.tables import DraftRow, JobRow

VISIBLE_DRAFT = "visible_draft"
VISIBLE_JOB = "visible_job"


class NotInLaunchContextError(ProvenoteError):
    status_code = 404


@dataclass(frozen=True, slots=True)
class VisibleDraft:
    """A draft the requesting session may see: the session, its launch, and the draft."""

    session_id: str
    context: LaunchContext
    draft: DraftRow

    @property
    def actor(self) -> str:
        """Whom the audit trail names for what this session does to the draft."""
        return self.context.fhir_user or "unknown user"


@dataclass(frozen=True, slots=True)
class VisibleJob:
    """A job the requesting session may see: the session, its launch, and the job."""

    session_id: str
    context: LaunchContext
    job: JobRow


async def _launch_for(
    connection: ASGIConnection[Any, Any, Any, Any], patient: str, iss: str
) -> tuple[str, LaunchContext] | None:
    provenote = connection.app.state.provenote
    session_id = connection.cookies.get(provenote.session_cookie)
    context = await provenote.store.context(session_id)
    if session_id is None or context is None:
        return None
    if context.patient != patient or context.iss != iss:
        return None
    return session_id, context


async def launched_for_draft(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """A launch for this draft's patient on this draft's EHR."""
    # With what review works on (its summary and evidence), from the drafts' one door.
    draft = await connection.app.state.provenote.drafts.load(connection.path_params["draft_id"])
    found = await _launch_for(connection, draft.patient, draft.iss) if draft else None
    if draft is None or found is None:
        raise NotInLaunchContextError(
            "No such draft in this launch context. If your session ended, launch Provenote "
            "again from the patient's chart: drafts and their review are kept."
        )
    connection.state[VISIBLE_DRAFT] = VisibleDraft(*found, draft=draft)


async def launched_for_job(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """A launch for this job's patient on this job's EHR."""
    jobs = connection.app.state.provenote.jobs
    job = await jobs.get(connection.path_params["job_id"]) if jobs is not None else None
    found = await _launch_for(connection, job.patient, job.iss) if job else None
    if job is None or found is None:
        raise NotInLaunchContextError("no such job in this launch context")
    connection.state[VISIBLE_JOB] = VisibleJob(*found, job=job)


# What a guarded handler declares to be handed what its guard found.
SeenDraft = NamedDependency[VisibleDraft]
SeenJob = NamedDependency[VisibleJob]


def visible_draft(request: Request[Any, Any, Any]) -> VisibleDraft:
    """What ``launched_for_draft`` found (a dependency for the handlers it guards)."""
    found: VisibleDraft = request.state[VISIBLE_DRAFT]
    return found


def visible_job(request: Request[Any, Any, Any]) -> VisibleJob:
    """What ``launched_for_job`` found."""
    found: VisibleJob = request.state[VISIBLE_JOB]
    return found
