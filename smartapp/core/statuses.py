"""The states a job, a draft and a write-back can be in, and the moves allowed between them.

Stored as their string values (the columns are strings, the API and pages show them); every
change of state goes through ``moved``, so an impossible move (a signed draft made preliminary,
a finished job running again) is refused where it would happen rather than stored.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from pipeline.errors import ProvenoteError


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class JobStage(StrEnum):
    QUEUED = "queued"
    FETCHING = "fetching"
    INGESTING = "ingesting"
    SUMMARIZING = "summarizing"
    WRITING_BACK = "writing_back"
    DONE = "done"


class JobOrigin(StrEnum):
    """Who asked for a job, which says whose tokens it acts with."""

    # A user's launch: the job acts with their session.
    LAUNCH = "launch"
    # The FHIR API's $summarize: Provenote itself (SMART Backend Services).
    BACKEND = "backend"
    # A CDS Hooks call: the hook's fhirAuthorization, kept as a session of its own.
    HOOK = "hook"
    # Pre-drafting: Provenote itself, for an in-progress stay.
    PREDRAFT = "predraft"


# Jobs that act as Provenote itself, with a Backend Services token.
ACTS_AS_PROVENOTE = frozenset({JobOrigin.BACKEND, JobOrigin.PREDRAFT})
# Jobs that draft before any physician asked: their draft is written to the chart when a
# physician first opens it (unless the EHR's registration asks for it at once).
DRAFTED_AHEAD = frozenset({JobOrigin.HOOK, JobOrigin.PREDRAFT})


class DraftStatus(StrEnum):
    PRELIMINARY = "preliminary"
    # A signature in progress: claimed, the EHR's copy being made final.
    SIGNING = "signing"
    FINAL = "final"
    # A newer version of the stay's draft replaced this one ("Draft again"), in Provenote and
    # in the EHR's copy: it is kept, read-only.
    SUPERSEDED = "superseded"


class WriteBackStatus(StrEnum):
    DONE = "done"
    DEFERRED = "deferred"
    # The grant's scopes do not let Provenote write notes.
    NOT_PERMITTED = "not_permitted"
    # The EHR creates neither Compositions nor DocumentReferences from apps.
    NOT_ACCEPTED = "not_accepted"
    # This installation is configured to write nothing to that EHR.
    DISABLED = "disabled"
    USER_MAY_NOT_WRITE = "user_may_not_write"
    SIGNED = "signed"
    # Not written: the stay already has a signed note, which no new draft replaces or joins.
    HELD_SIGNED = "held_signed"


ACTIVE_JOB_STATES = (JobState.QUEUED, JobState.RUNNING)

JOB_MOVES: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING}),
    # Back to queued: its process died (lease ran out, or the queue saw the worker stall).
    JobState.RUNNING: frozenset(
        {JobState.RUNNING, JobState.DONE, JobState.FAILED, JobState.QUEUED}
    ),
    # A failed job is queued again by a retry; it continues from what it stored.
    JobState.FAILED: frozenset({JobState.QUEUED}),
    # A duplicate delivery of a finished job runs again and finds everything stored: done again.
    JobState.DONE: frozenset({JobState.DONE}),
}
DRAFT_MOVES: dict[DraftStatus, frozenset[DraftStatus]] = {
    DraftStatus.PRELIMINARY: frozenset({DraftStatus.SIGNING, DraftStatus.SUPERSEDED}),
    # A signature completes, or is released (the EHR refused, the process died).
    DraftStatus.SIGNING: frozenset({DraftStatus.FINAL, DraftStatus.PRELIMINARY}),
    DraftStatus.FINAL: frozenset(),
    DraftStatus.SUPERSEDED: frozenset(),
}

S = TypeVar("S", JobState, DraftStatus)


class InvalidMoveError(ProvenoteError):
    """A job or draft asked to move to a state it cannot reach from where it is."""

    status_code = 409


def moved(moves: dict[S, frozenset[S]], current: str, new: S) -> S:
    """``new``, if the move from ``current`` is allowed; InvalidMoveError if not."""
    allowed = moves[type(new)(current)]
    if new not in allowed:
        raise InvalidMoveError(f"cannot go from {current} to {new.value}")
    return new
