"""What operators watch, in Prometheus' format: jobs, stages, the EHR, write-backs, models,
sign-off.

Counters and histograms live in the process that does the work (a web process or a worker);
each process answers ``/metrics`` for itself (workers with ``provenote worker --metrics-port``),
and Prometheus adds them up. Jobs by state, the oldest queued job's age and the live workers
are read from the database at scrape time by web processes (workers leave them out rather than
publish zeros), so every web process reports the same, whole-installation figure: aggregate them
with ``max``, never ``sum`` (docs/operations.md). Labels never carry a
patient, a user or a token: only resource types, stages, statuses and outcomes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

# The installation-wide gauges, read from the database by a web process's /metrics only: a worker
# that served them would publish zeros it never reads.
INSTALLATION = CollectorRegistry(auto_describe=True)
JOBS = Gauge(
    "provenote_jobs", "Drafting jobs in the database, by state.", ["state"], registry=INSTALLATION
)
OLDEST_QUEUED = Gauge(
    "provenote_oldest_queued_job_seconds",
    "Age of the oldest job waiting for a worker (0: none).",
    registry=INSTALLATION,
)
LIVE_WORKERS = Gauge(
    "provenote_live_workers",
    "Job workers alive (heartbeat within worker_stalled_after_s).",
    registry=INSTALLATION,
)
SCRAPE_ERRORS = Counter(
    "provenote_metrics_scrape_errors_total",
    "Scrapes whose database-backed gauges could not be read (the rest was still served).",
)
STAGE_SECONDS = Histogram(
    "provenote_job_stage_seconds",
    "How long each job stage took.",
    ["stage"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
)
JOBS_FINISHED = Counter("provenote_jobs_finished_total", "Jobs that ended, by outcome.", ["state"])
JOBS_REQUEUED = Counter(
    "provenote_jobs_requeued_total",
    "Jobs queued again, by why: retried (a failed job, asked for again), handed_back (a "
    "stopping worker gave it back), lease_expired (its process died), stalled_worker (the queue "
    "took it from a worker whose heartbeat stopped).",
    ["reason"],
)
FHIR_REQUESTS = Counter(
    "provenote_fhir_requests_total",
    "Requests to the EHR's FHIR server, by method, resource type and HTTP status.",
    ["method", "resource_type", "status"],
)
FHIR_RETRIES = Counter(
    "provenote_fhir_retries_total",
    "Requests to the EHR retried, by why (HTTP status, or 'transport').",
    ["reason"],
)
WRITE_BACKS = Counter(
    "provenote_write_backs_total",
    "Drafts written back to the EHR, by strategy and outcome.",
    ["strategy", "status"],
)
MODEL_CALLS = Counter(
    "provenote_model_calls_total",
    "Calls to a language model, by backend and outcome.",
    ["backend", "outcome"],
)
MODEL_TOKENS = Counter(
    "provenote_model_tokens_total",
    "Tokens a language model read (prompt) and wrote (completion), by backend.",
    ["backend", "kind"],
)
DRAFTS_SIGNED = Counter("provenote_drafts_signed_total", "Drafts signed by a physician.")
HOOK_CALLS = Counter(
    "provenote_cds_hook_calls_total",
    "CDS Hooks calls, by answer: ready, drafting, no_card, refused.",
    ["answer"],
)
CDS_FEEDBACK = Counter(
    "provenote_cds_feedback_total",
    "What physicians did with the discharge card, as the EHR reported it: outcome (accepted, "
    "overridden), the card (ready, drafting) and the override reason's code (one of the card's "
    "overrideReasons, 'other' for another, 'none' when not given).",
    ["outcome", "card", "reason"],
)
PREDRAFTS = Counter(
    "provenote_predrafts_total",
    "Stays pre-drafting looked at, by outcome: queued, redrafted, unchanged, drafting, signed.",
    ["outcome"],
)
DRAFT_AT_LAUNCH = Counter(
    "provenote_draft_at_launch_total",
    "What a physician's launch found for the stay: ready (a draft waiting), drafting, none.",
    ["found"],
)
DRAFT_AGE_AT_LAUNCH = Histogram(
    "provenote_draft_age_at_launch_seconds",
    "How long a draft had been waiting when a physician's launch opened it.",
    buckets=(10, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600),
)


def serve_worker_metrics(port: int, host: str = "127.0.0.1") -> WSGIServer:
    """Serve this process's metrics at ``/metrics`` (and nothing else) on ``host:port`` from a
    daemon thread. Loopback by default: the figures describe the installation's workload, so
    an operator widens it on purpose (``--metrics-host``), never by accident."""
    metrics = make_wsgi_app()

    def only_metrics(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"Not found: metrics are served at /metrics\n"]
        answer: Iterable[bytes] = metrics(environ, start_response)
        return answer

    server = make_server(host, port, only_metrics, ThreadingWSGIServer, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


class _Quiet(WSGIRequestHandler):
    """Scrapes are not worth a log line each."""

    def log_message(self, format: str, *args: Any) -> None:
        return None
