"""The app's branches of the one hierarchy (``pipeline.errors``), and error ids.

A message of a ``ProvenoteError`` is safe to show and to store in a job: it never carries a
token, an EHR's error body or note text. What an outside system said goes to the server log,
truncated, under the error id the message names.
"""

from __future__ import annotations

import json
import logging
import re
import uuid

from pipeline.errors import ProvenoteError

log = logging.getLogger("provenote")
# An EHR's answers verbatim (they can hold names and dates of birth): silent unless the operator
# turns them on for debugging (PROVENOTE_LOG_EHR_BODIES, ``smartapp.core.logs``).
ehr_bodies = logging.getLogger("provenote.ehr_bodies")
ehr_bodies.setLevel(logging.CRITICAL + 1)
LOGGED_BODY_CHARS = 500
# An error code as OAuth and FHIR write them; anything else an answer says is not logged.
ERROR_CODE = re.compile(r"[A-Za-z][A-Za-z_-]{0,39}")


def new_error_id() -> str:
    return uuid.uuid4().hex[:12]


def logged(what: str, detail: object) -> str:
    """Log ``detail`` (truncated) under a new error id; the id, for the user-facing message."""
    error_id = new_error_id()
    log.warning("error %s: %s: %.*s", error_id, what, LOGGED_BODY_CHARS, str(detail))
    return error_id


def _error_code(body: str) -> str | None:
    """The answer's error code: OAuth's ``error``, or an OperationOutcome's first issue code."""
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    if not isinstance(answer, dict):
        return None
    code = answer.get("error")
    issues = answer.get("issue")
    if code is None and isinstance(issues, list) and issues and isinstance(issues[0], dict):
        code = issues[0].get("code")
    return code if isinstance(code, str) and ERROR_CODE.fullmatch(code) else None


def answer_shape(body: bytes | str, content_type: str | None = None) -> str:
    """What may be logged of an outside system's answer: its size, type and error code."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    size = len(body)
    kind = (content_type or "no content type").split(";", 1)[0].strip()
    code = _error_code(text)
    return f"{size} bytes of {kind}" + (f", error code {code}" if code else "")


def logged_answer(what: str, body: bytes | str, content_type: str | None = None) -> str:
    """Log an EHR's answer by its shape only (the verbatim body on the debug logger, when the
    operator turned it on) under a new error id; the id, for the user-facing message."""
    error_id = logged(what, answer_shape(body, content_type))
    if ehr_bodies.isEnabledFor(logging.DEBUG):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        ehr_bodies.debug("error %s: %s: %.*s", error_id, what, LOGGED_BODY_CHARS, text)
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
