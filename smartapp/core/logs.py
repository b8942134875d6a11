"""Structured logs: one JSON object per line, with the request and the job it belongs to.

Operators feed these lines to their log pipeline and follow one request or one job across web
and worker processes by its id. What is logged is ours to choose, and it never includes a
token: a bearer credential, a JWT or an OAuth code that slips into a message (an EHR's error
body, an exception's text) is masked before the line is written. Request lines carry the path,
never the query string (``/callback?code=…``). Patient data stays out: messages name resources
by id, never by content, and a request to the EHR is logged by its method, resource type and
status, never its URL (a FHIR search's query holds the patient and the stay's dates). Health
checks and metrics scrapes are logged at DEBUG, so a balancer's probes do not bury the rest.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID: ContextVar[str | None] = ContextVar("provenote_request_id", default=None)
JOB_ID: ContextVar[str | None] = ContextVar("provenote_job_id", default=None)
REQUEST_ID_HEADER = "x-request-id"
# An id a load balancer or client sent is kept when it looks like an id, not free text.
CLEAN_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
SECRETS = (
    re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),  # a JWT (JWS)
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(
        r"(?i)\b(access_token|refresh_token|id_token|client_secret|code|client_assertion)"
        r"([\"']?\s*[=:]\s*[\"']?)[^\s\"'&,}]{6,}"
    ),
)
MASK = "[redacted]"
# Paths probed every few seconds by balancers and scrapers.
QUIET_PATHS = frozenset({"/health", "/ready", "/metrics"})

access = logging.getLogger("provenote.access")


def redact(text: str) -> str:
    """``text`` with every credential-shaped part masked."""
    text = SECRETS[0].sub(MASK, text)
    text = SECRETS[1].sub(lambda found: f"{found.group(1)} {MASK}", text)
    return SECRETS[2].sub(lambda found: f"{found.group(1)}{found.group(2)}{MASK}", text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for name, variable in (("request_id", REQUEST_ID), ("job_id", JOB_ID)):
            value = variable.get()
            if value is not None:
                line[name] = value
        for name in ("method", "path", "status", "duration_ms", "event", "stage", "state"):
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False)


def _requested(url: object) -> str:
    """Where an outgoing request went, without its path or query: the host (and port)."""
    parsed = urlsplit(str(url))
    host = parsed.hostname or "request"
    return f"{host}:{parsed.port}" if parsed.port else host


class OutgoingRequests(logging.Filter):
    """httpx's line for each request (shown only when its logger is set to INFO on purpose),
    rewritten to the method, the host and the status: ``HTTP Request: GET ehr.example.org 200``.
    FHIR requests are logged by the FHIR client, with their resource type."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _HTTPX_REQUEST_LINE and isinstance(record.args, tuple):
            method, url, _version, status, _reason = record.args
            record.msg, record.args = "HTTP Request: %s %s %s", (method, _requested(url), status)
        return True


_HTTPX_REQUEST_LINE = 'HTTP Request: %s %s "%s %d %s"'


def configure_logging(
    json_lines: bool = True, level: str = "INFO", ehr_bodies: bool = False
) -> None:
    """The process's log output: JSON lines (or plain text) on stderr, at ``level``; the EHR's
    error answers verbatim only with ``ehr_bodies`` (they can hold patient data)."""
    handler = logging.StreamHandler(sys.stderr)
    if json_lines:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    logging.getLogger("provenote.ehr_bodies").setLevel(
        logging.DEBUG if ehr_bodies else logging.CRITICAL + 1
    )
    outgoing = logging.getLogger("httpx")
    # The FHIR client logs its requests by resource type; httpx's own line per request only says
    # where it went, and only at WARNING and above unless an operator lowers it on purpose.
    outgoing.setLevel(max(root.level, logging.WARNING))
    if not any(isinstance(kept, OutgoingRequests) for kept in outgoing.filters):
        outgoing.addFilter(OutgoingRequests())
    # httpcore's debug lines trace connections; the request itself is httpx's line above.
    logging.getLogger("httpcore").setLevel(max(root.level, logging.INFO))


def request_ids(app: ASGIApp) -> ASGIApp:
    """ASGI middleware: each request gets an id (the caller's, when it sent a clean one), echoed
    in ``x-request-id``, carried by every log line written while the request runs, and one
    access line (method, path without query, status, duration)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        request_id = sent if CLEAN_ID.fullmatch(sent) else secrets.token_hex(8)
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await app(scope, receive, send_with_id)
        finally:
            access.log(
                logging.DEBUG if scope["path"] in QUIET_PATHS else logging.INFO,
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            REQUEST_ID.reset(token)

    return middleware
