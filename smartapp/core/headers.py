"""Security headers on every answer, set in one place.

Pages may be framed only by the configured EHRs (SMART apps run inside the EHR's frame; nothing
else may frame them), scripts come only from our own origin, nothing with patient data is cached
(``no-store`` on everything but the static files), and HTTPS deployments send HSTS. A
``before_send`` hook sees every response, error pages and 404s included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from litestar.types import Message, Scope

from smartapp.core.settings import Settings

STATIC_PREFIX = "/static/"
HSTS = b"max-age=31536000; includeSubDomains"
REPLACED = frozenset({b"content-security-policy", b"cache-control"})


def content_security_policy(settings: Settings) -> str:
    ancestors = " ".join(["'self'", *settings.ehr_origins(), *settings.frame_ancestors])
    return (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
        "data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
        f"frame-ancestors {ancestors}"
    )


def security_headers(settings: Settings) -> Callable[[Message, Scope], Awaitable[None]]:
    """A Litestar ``before_send`` hook adding the headers to every HTTP answer."""
    policy = content_security_policy(settings).encode("latin-1")

    async def add_headers(message: Message, scope: Scope) -> None:
        if message["type"] != "http.response.start":
            return
        static = scope.get("path", "").startswith(STATIC_PREFIX)
        headers = [
            (name, value)
            for name, value in message.get("headers", [])
            if name.lower() not in REPLACED
        ]
        headers += [
            (b"content-security-policy", policy),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
            (b"cache-control", b"public, max-age=300" if static else b"no-store"),
        ]
        if settings.https:
            headers.append((b"strict-transport-security", HSTS))
        message["headers"] = headers

    return add_headers
