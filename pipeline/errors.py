"""Provenote's one exception hierarchy: every failure we raise on purpose is a ProvenoteError.

Its message is safe to show to users and to store with a job: it never carries a token, an
outside system's answer or note text (those go to the log, under an error id the message names).
The branches say whose the failure is, so that one handler (``smartapp.core.handlers``) answers
each with the right page, OperationOutcome or job error: the input (a malformed resource, an
unreadable document), a model, the launch, the EHR, the draft's state, the API's caller.
"""

from __future__ import annotations


class ProvenoteError(Exception):
    """A failure whose message is safe to show to users and to store."""

    # The HTTP status a request that fails with it is answered with.
    status_code = 500


class InputError(ProvenoteError, ValueError):
    """The input cannot be used as it is: a malformed resource, an unreadable document, an
    edit that says nothing. Says what is wrong, never the content."""

    status_code = 400


class ModelError(ProvenoteError, RuntimeError):
    """A language model (or the machinery around it) failed or answered unusably."""

    status_code = 502
