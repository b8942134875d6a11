"""The app's branches of the one hierarchy (``pipeline.errors``), and error ids.

A message of a ``ProvenoteError`` is safe to show and to store in a job: it never carries a
token, an EHR's error body or note text. What an outside system said goes to the server log,
truncated, under the error id the message names.
"""

from __future__ import annotations

import logging
import uuid

from pipeline.errors import ProvenoteError

log = logging.getLogger("provenote")
LOGGED_BODY_CHARS = 500


def new_error_id() -> str:
    return uuid.uuid4().hex[:12]


def logged(what: str, detail: object) -> str:
    """Log ``detail`` (truncated) under a new error id; the id, for the user-facing message."""
    error_id = new_error_id()
    log.warning("error %s: %s: %.*s", error_id, what, LOGGED_BODY_CHARS, str(detail))
    return error_id


class LaunchError(ProvenoteError):
    """The SMART launch cannot go on: discovery, authorization, the token exchange, a session."""

    status_code = 502


class EhrError(ProvenoteError):
    """The EHR refused or failed a request (its answer is in the log, not the message)."""

    status_code = 502


class DraftStateError(ProvenoteError):
    """A draft cannot be changed as asked in its present state (stale, closed, flags open)."""

    status_code = 409


class CallerError(ProvenoteError):
    """The API's caller is not authenticated, not allowed, or asked for something malformed."""

    status_code = 400
