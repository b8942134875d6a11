"""Security headers on every answer, set in one place.

Pages may be framed only by the configured EHRs (SMART apps run inside the EHR's frame; nothing
else may frame them), scripts come only from our own origin, nothing with patient data is cached
(``no-store`` on everything but the static files), and HTTPS deployments send HSTS.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from smartapp.settings import AppSettings

STATIC_PREFIX = "/static/"
HSTS = "max-age=31536000; includeSubDomains"


def content_security_policy(settings: AppSettings) -> str:
    ancestors = " ".join(["'self'", *settings.ehr_origins(), *settings.frame_ancestors])
    return (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
        "data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
        f"frame-ancestors {ancestors}"
    )


def security_headers(settings: AppSettings) -> object:
    """Litestar middleware (an ASGI app factory) adding the headers to every HTTP answer."""
    policy = content_security_policy(settings).encode("latin-1")

    def middleware(app: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            static = scope["path"].startswith(STATIC_PREFIX)

            async def send_with_headers(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [
                        (name, value)
                        for name, value in message.get("headers", [])
                        if name.lower() not in {b"content-security-policy", b"cache-control"}
                    ]
                    headers += [
                        (b"content-security-policy", policy),
                        (b"x-content-type-options", b"nosniff"),
                        (b"referrer-policy", b"same-origin"),
                        (b"cache-control", b"public, max-age=300" if static else b"no-store"),
                    ]
                    if settings.https:
                        headers.append((b"strict-transport-security", HSTS.encode("ascii")))
                    message = {**message, "headers": headers}
                await send(message)

            await app(scope, receive, send_with_headers)

        return wrapped

    return middleware
