"""HTML answers: a page, or an error page that says what happened and that nothing changed."""

from __future__ import annotations

from litestar.response import Response

from pipeline.text.rendering import render


def html(page: str, status: int = 200) -> Response[str]:
    """An HTML answer; its security headers (CSP, no-store) come from ``smartapp.core.headers``."""
    return Response(page, status_code=status, media_type="text/html")


SETUP_HEADING = "Provenote is not set up for this EHR"
SETUP_ADVICE = (
    "An administrator must change Provenote's registration with this EHR (or the EHR's with "
    "Provenote); launching again will not help. Nothing was stored."
)


def error_page(
    message: str, status: int = 400, heading: str | None = None, advice: str | None = None
) -> Response[str]:
    """An error page; without a heading it is the launch's (no token exchanged, nothing kept)."""
    advice = advice or ("Nothing was changed." if heading else None)
    return html(
        render("app/error.html.j2", message=message, heading=heading, advice=advice), status
    )


def setup_problem(message: str, status: int = 502) -> Response[str]:
    """A launch refused by configuration: the page says who can fix it, never to relaunch."""
    return error_page(message, status, heading=SETUP_HEADING, advice=SETUP_ADVICE)
