"""``Retry-After``, as seconds or as an HTTP date, read the same way for every server we call."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

# Answers worth asking again after a wait: rate limits and a server's passing failures.
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
# However long a server asks, no request waits longer than this between tries.
MAX_RETRY_WAIT_S = 30.0


def retry_after_seconds(response: httpx.Response) -> float | None:
    """How long the server asks us to wait; None when it says nothing usable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def retry_wait(response: httpx.Response, backoff_s: float) -> float:
    """How long to wait before asking again: what the server asks, else our backoff, at most
    ``MAX_RETRY_WAIT_S`` either way."""
    asked = retry_after_seconds(response)
    return min(MAX_RETRY_WAIT_S, backoff_s if asked is None else asked)
