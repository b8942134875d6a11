"""``Retry-After``, as seconds or as an HTTP date, read the same way for every server we call."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx


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
