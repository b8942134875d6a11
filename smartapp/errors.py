"""The app's errors: what a user may be shown, and an id that finds the details in the log.

A message of a ``ProvenoteError`` is safe to show and to store in a job: it never carries a
token, an EHR's error body or note text. What an outside system said goes to the server log,
truncated, under the error id the message names.
"""

from __future__ import annotations

import logging
import uuid

log = logging.getLogger("provenote")
LOGGED_BODY_CHARS = 500


class ProvenoteError(Exception):
    """A failure whose message is safe to show to users and to store."""


def new_error_id() -> str:
    return uuid.uuid4().hex[:12]


def logged(what: str, detail: object) -> str:
    """Log ``detail`` (truncated) under a new error id; the id, for the user-facing message."""
    error_id = new_error_id()
    log.warning("error %s: %s: %.*s", error_id, what, LOGGED_BODY_CHARS, str(detail))
    return error_id
