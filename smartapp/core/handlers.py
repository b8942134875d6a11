"""One answer for every failure: an error page for the browser, JSON for the app's own API, an
OperationOutcome under ``/fhir``. A ``ProvenoteError`` says what went wrong in words safe to
show, with its status; anything else is logged under an error id and answered with only that id,
so no stack trace, token or note text ever reaches a response."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from pipeline.errors import ProvenoteError
from pipeline.text.rendering import render
from smartapp.core.errors import log, new_error_id

FHIR_JSON = "application/fhir+json"
JSON_PREFIXES = ("/api/", "/jobs/")


def error_response(
    request: Request[Any, Any, Any],
    message: str,
    status: int,
    code: str = "exception",
    headers: dict[str, str] | None = None,
    heading: str | None = None,
) -> Response[Any]:
    """The failure, in the form the requested path speaks; under /fhir, ``code`` is the issue's
    type and a 401 says how to authenticate."""
    path = request.url.path
    headers = dict(headers or {})
    if path == "/fhir" or path.startswith("/fhir/"):
        if status == 401:
            headers["www-authenticate"] = 'Bearer realm="provenote", error="invalid_token"'
        issue = {"severity": "error", "code": code, "diagnostics": message}
        body = {"resourceType": "OperationOutcome", "issue": [issue]}
        return Response(body, status_code=status, media_type=FHIR_JSON, headers=headers)
    if path.startswith(JSON_PREFIXES):
        return Response({"error": message}, status_code=status, headers=headers)
    heading = heading or "Something went wrong"
    page = render("app/error.html.j2", message=message, heading=heading, advice="")
    return Response(page, status_code=status, media_type="text/html", headers=headers)


def provenote_error(request: Request[Any, Any, Any], failure: Exception) -> Response[Any]:
    status = getattr(failure, "status_code", ProvenoteError.status_code)
    code = getattr(failure, "code", "exception")
    headers = getattr(failure, "headers", None)
    heading = getattr(failure, "heading", None)
    return error_response(
        request,
        str(failure),
        status if isinstance(status, int) else 500,
        code if isinstance(code, str) else "exception",
        headers if isinstance(headers, dict) else None,
        heading if isinstance(heading, str) else None,
    )


def unexpected_error(request: Request[Any, Any, Any], failure: Exception) -> Response[Any]:
    error_id = new_error_id()
    path = request.url.path
    log.error("error %s: %s %s failed", error_id, request.method, path, exc_info=failure)
    return error_response(request, f"internal error (error {error_id})", 500)


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    ProvenoteError: provenote_error,
    500: unexpected_error,
}
