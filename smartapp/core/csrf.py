"""CSRF tokens bound to the server-side session.

The token is an HMAC of the session id under the app's secret: a page can only carry it if the
server rendered that page for this session, and no per-session token has to be stored. Forms send
it as ``csrf_token``, scripts as the ``X-CSRF-Token`` header.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from litestar import Request

FIELD = "csrf_token"
HEADER = "x-csrf-token"


def csrf_token(secret: bytes, session_id: str) -> str:
    return hmac.new(secret, b"csrf|" + session_id.encode("utf-8"), hashlib.sha256).hexdigest()


def csrf_valid(secret: bytes, session_id: str | None, presented: str | None) -> bool:
    if not session_id or not presented:
        return False
    return hmac.compare_digest(csrf_token(secret, session_id), presented)


async def csrf_checked_form(
    request: Request[Any, Any, Any], secret: bytes, session_id: str
) -> dict[str, str] | None:
    """The posted form, if it carries this session's token (the header, else the form field),
    which a forged cross-site post cannot; None if not."""
    form = {key: str(value) for key, value in (await request.form()).items()}
    presented = request.headers.get(HEADER) or form.get(FIELD)
    return form if csrf_valid(secret, session_id, presented) else None
