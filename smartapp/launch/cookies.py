"""The launch's and the session's cookies, as the deployment lets a browser keep them.

Web EHRs show SMART apps in an iframe on the EHR's own site, where a browser sends an app's
``SameSite=Lax`` cookies with no request at all. Over HTTPS the cookies are therefore
``SameSite=None; Secure; Partitioned`` (CHIPS): kept in the frame, partitioned by the EHR's site so
no other site's frame of Provenote can read them, and ``__Host-`` prefixed (host-only, path-wide,
secure). Over plain HTTP on loopback (the demo) they stay ``SameSite=Lax``, since a browser
refuses ``SameSite=None`` without ``Secure``.
"""

from __future__ import annotations

from typing import Any

from litestar.datastructures import Cookie

from smartapp.core.settings import Settings


class PartitionedCookie(Cookie):
    """A cookie with the ``Partitioned`` attribute, which Python's cookie writer does not know."""

    def to_header(self, **kwargs: Any) -> str:
        return f"{super().to_header(**kwargs)}; Partitioned"


def cookie(settings: Settings, name: str, value: str, max_age: int | None = None) -> Cookie:
    """The app's cookie ``name``: kept inside a cross-site frame over HTTPS, Lax otherwise."""
    if settings.https:
        return PartitionedCookie(
            key=name,
            value=value,
            httponly=True,
            samesite="none",
            secure=True,
            path="/",
            max_age=max_age,
        )
    return Cookie(
        key=name,
        value=value,
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
        path="/",
        max_age=max_age,
    )
