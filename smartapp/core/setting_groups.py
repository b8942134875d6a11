"""Provenote's settings by topic; ``smartapp.core.settings.Settings`` is all of them at once.

Each group is a plain model of fields read from ``PROVENOTE_*`` variables of the same names (the
groups do not prefix them); a part of the app that needs one topic can be given that group.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator

from fhir_mapping.write_strategy import Strategy
from pipeline.evidence.mapped import INPATIENT_CLASSES
from smartapp.core.registrations import (
    ClientAuth,
    ClientRegistration,
    SigningAlg,
    callback_id,
    normalise_issuer,
    origin_of,
)

# evidence-only, smollm2, openai:URL#MODEL or transformers:DIR|FILE.gguf
# (``smartapp.core.language_models``).
SUMMARIZER_PATTERN = (
    r"evidence-only|smollm2|openai:(?P<url>https?://[^#\s]+)#(?P<model>\S+)"
    r"|transformers:(?P<dir>\S+)"
)


def _registrations_listed(path: Path) -> list[ClientRegistration]:
    """The registrations file's JSON list; a file that cannot be read says so in one sentence."""
    where = f"PROVENOTE_REGISTRATIONS_FILE={path}"
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{where} cannot be read: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{where} is not a JSON list of registrations: {error}") from None
    if not isinstance(listed, list):
        raise ValueError(f"{where} is not a JSON list of registrations")
    registrations = []
    for number, item in enumerate(listed, start=1):
        try:
            registrations.append(ClientRegistration.model_validate(item))
        except ValidationError as invalid:
            wrong = "; ".join(
                f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
                for error in invalid.errors(include_input=False)
            )
            raise ValueError(f"{where}: registration {number} cannot work ({wrong})") from None
    return registrations


class EhrSettings(BaseModel):
    """How Provenote reaches the EHRs: who may launch it and how it is registered with each, how
    it writes back, what a stay is, and its HTTP limits towards them."""

    # The default registration, used for every issuer in ``allowed_issuers``.
    client_id: str = "provenote"
    client_auth: ClientAuth = "public"
    client_secret: SecretStr | None = None
    # PEM private key for private_key_jwt; generated under data_dir on first use when unset.
    signing_key_file: Path | None = None
    signing_alg: SigningAlg = "RS384"
    # Per EHR (FHIR base URL): force a write-back strategy instead of reading it from the
    # CapabilityStatement: composition | document-reference | final-only | none.
    writeback_strategies: dict[str, Strategy] = Field(default_factory=dict)
    # Who may launch the app. Default deny: an issuer neither listed here nor registered below
    # is refused before anything is fetched from it.
    allowed_issuers: list[str] = Field(default_factory=list)
    # Per-EHR registrations (JSON list of ClientRegistration), or a file holding that list.
    registrations: list[ClientRegistration] = Field(default_factory=list)
    registrations_file: Path | None = None
    # Ask the default registration's EHRs for offline_access rather than online_access.
    offline_access: bool = False
    # Encounter classes (v3 ActCode) a discharge summary is drafted for.
    inpatient_classes: list[str] = Field(default_factory=lambda: sorted(INPATIENT_CLASSES))
    http_timeout_s: float = Field(30.0, gt=0)
    # PEM file of the certificate authorities the EHRs' HTTPS certificates are checked against
    # (a hospital's own CA); default: the system's.
    ca_bundle: Path | None = None
    fhir_concurrency: int = Field(8, ge=1, le=64)
    fhir_max_retries: int = Field(4, ge=0, le=10)
    fhir_page_size: int = Field(100, ge=1, le=1000)
    # Requests per second to one EHR from the whole installation (every process, on PostgreSQL),
    # with bursts of up to ehr_request_burst; unset: each process only bounds its concurrency.
    ehr_requests_per_second: float | None = Field(None, gt=0)
    ehr_request_burst: int = Field(10, ge=1)
    # How far before admission the record pull reaches for baselines, social history and
    # recently ended problems and orders (active ones are pulled whatever their age).
    record_lookback_days: int = Field(365, ge=1)
    # Tokens are refreshed this long before they expire (at most half their lifetime).
    refresh_margin_s: int = Field(60, ge=0)

    @model_validator(mode="after")
    def _read_registrations(self) -> EhrSettings:
        if self.registrations_file is not None:
            self.registrations = [
                *self.registrations,
                *_registrations_listed(self.registrations_file),
            ]
        self.allowed_issuers = [normalise_issuer(iss) for iss in self.allowed_issuers]
        return self

    def registration_for(self, iss: str) -> ClientRegistration | None:
        """How the app is registered with ``iss``; None: that EHR may not launch the app."""
        issuer = normalise_issuer(iss)
        for registration in self.registrations:
            if registration.issuer == issuer:
                return registration
        if issuer in self.allowed_issuers:
            return ClientRegistration(
                issuer=issuer,
                client_id=self.client_id,
                client_auth=self.client_auth,
                client_secret=self.client_secret,
                signing_key_file=self.signing_key_file,
                signing_alg=self.signing_alg,
                refresh="offline_access" if self.offline_access else "auto",
            )
        return None

    def all_registrations(self) -> list[ClientRegistration]:
        """Every EHR that may launch the app, as it is registered."""
        listed = [self.registration_for(iss) for iss in self.allowed_issuers]
        known = {registration.issuer for registration in self.registrations}
        return [
            *self.registrations,
            *(item for item in listed if item is not None and item.issuer not in known),
        ]

    def ehr_origins(self) -> list[str]:
        """Every origin of a configured EHR: its issuer and the endpoints it names."""
        origins = {origin_of(iss) for iss in self.allowed_issuers}
        for registration in self.registrations:
            origins |= {origin_of(registration.issuer), *registration.named_origins()}
        return sorted(origins)


class StorageSettings(BaseModel):
    """Where Provenote keeps things: its data folder and database, and the secrets at rest."""

    data_dir: Path = Path("data")
    # SQLAlchemy async DSN; default: SQLite in data_dir. E.g. postgresql+asyncpg://user@host/db
    database_url: str | None = None
    # Fernet key encrypting tokens at rest; else read from (or generated at) the file.
    token_encryption_key: SecretStr | None = None
    token_encryption_key_file: Path | None = None
    # Secret the CSRF tokens are derived from; else read from (or generated at) the file.
    app_secret: SecretStr | None = None
    app_secret_file: Path | None = None
    # Key of the edits export's editor pseudonyms; else read from (or generated at) the file.
    pseudonym_secret: SecretStr | None = None
    pseudonym_secret_file: Path | None = None
    # This installation's id, part of every written note's idempotency identifier; default:
    # generated once and kept in the database.
    installation_id: str | None = None
    # serve and worker migrate the schema as they start; false: they refuse a schema that is not
    # this version's, and `provenote migrate` runs the migrations on their own (rolling upgrades).
    migrate_on_start: bool = True
    # A job's pulled FHIR record (patient data, kept for the review's source pages and a relaunch's
    # comparison) is removed by `provenote purge` once its draft is signed, or this many days
    # after the job ended, whichever comes first. Drafts and the audit trail are kept.
    record_retention_days: int = Field(30, ge=0)

    @property
    def database_dsn(self) -> str:
        return (
            self.database_url or f"sqlite+aiosqlite:///{(self.data_dir / 'provenote.db').resolve()}"
        )


class JobSettings(BaseModel):
    """Where and how drafting jobs run, and how a worker shows it is alive."""

    job_workers: int = Field(2, ge=1, le=64)
    # Where jobs run: "in_process" (workers inside the web process; the embedded default) or
    # "procrastinate" (web processes only queue; `provenote worker` processes run the jobs;
    # needs a PostgreSQL database_url, whose database also holds the queue).
    job_queue: Literal["in_process", "procrastinate"] = "in_process"
    # Jobs one `provenote worker` process runs at once, and how it shows it is alive: a worker
    # silent for worker_stalled_after_s is taken for dead and its jobs are run by another.
    worker_concurrency: int = Field(2, ge=1, le=64)
    worker_heartbeat_s: float = Field(2.0, gt=0)
    worker_stalled_after_s: float = Field(10.0, gt=0)
    job_lease_s: float = Field(120.0, gt=0)
    # On SIGTERM a worker takes no new job and gives those in hand this long to finish, then
    # hands them back to the queue; a web process ends its progress streams ("reconnect") and
    # gives open requests this long.
    shutdown_grace_s: float = Field(60.0, ge=0)
    # /ready answers 503 while no worker is alive (with procrastinate, workers are separate
    # processes: a web process alone would queue jobs nobody runs).
    ready_requires_worker: bool = False
    # Pre-drafting on a schedule (off when unset): every this many seconds, the process that runs
    # jobs (`provenote worker`, or `provenote serve` with the in-process queue) drafts ahead the
    # in-progress inpatient stays of every EHR registered with "predraft": true.
    predraft_every_s: float | None = Field(None, ge=60)


class ModelSettings(BaseModel):
    """Who drafts the hospital course, and how a model server is asked."""

    # Where GGUF models are converted once for fast loading; default: data_dir/models.
    model_cache_dir: Path | None = None
    # Who drafts the hospital course: evidence-only (no model), smollm2 (the packaged
    # SmolLM2-135M-Instruct, run in the worker), openai:URL#MODEL (an OpenAI-compatible server)
    # or transformers:DIR (a local model directory, or a .gguf file, run in the worker).
    summarizer: str = Field("evidence-only", pattern=f"^(?:{SUMMARIZER_PATTERN})$")
    # A local causal LM directory that scores grounding (AURA) for an openai: summarizer.
    aura_scorer: Path | None = None
    # When the model cannot be used (unreachable, 5xx after retries, timeouts, unusable answers):
    # draft evidence-only and say so on the draft, or fail the job.
    model_fallback: Literal["evidence-only", "fail"] = "evidence-only"
    model_timeout_s: float = Field(120.0, gt=0)
    # The longest answer asked of an openai: server (max_tokens): a bound on a runaway decoder.
    model_max_tokens: int = Field(8192, ge=16)
    model_max_retries: int = Field(3, ge=0, le=10)
    # Structured output asked of an openai: server; detect: the strongest it takes, found once.
    model_response_format: Literal["detect", "json_schema", "json_object", "text"] = "detect"
    # Bearer key for an OpenAI-compatible model server (``openai:URL#MODEL``).
    llm_api_key: SecretStr | None = None


class WebSettings(BaseModel):
    """The web app: its address, logs, sessions, who may review, framing, the FHIR API, and the
    limits per browser session."""

    base_url: str = "http://127.0.0.1:8000"
    # `provenote serve` and `provenote worker` log JSON lines (or plain text) at this level.
    log_format: Literal["json", "text"] = "json"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Log the EHR's error answers verbatim (they can hold names and dates of birth): for a
    # debugging session only. Otherwise only their size, type and error code are logged.
    log_ehr_bodies: bool = False
    # Sessions end after this long without a request, and this long after the launch.
    session_idle_s: int = Field(30 * 60, gt=0)
    session_max_s: int = Field(12 * 3600, gt=0)
    # fhirUser resource types that may review and sign drafts (and whose launches write back).
    reviewer_roles: list[str] = Field(default_factory=lambda: ["Practitioner"])
    # A draft left ``signing`` longer than this (its process died) is reconciled with the EHR.
    signing_timeout_s: float = Field(300.0, gt=0)
    # Origins allowed to frame the pages besides the EHRs' own (CSP frame-ancestors).
    frame_ancestors: list[str] = Field(default_factory=list)
    # The FHIR API under /fhir accepts bearer JWTs (SMART Backend Services) from this issuer,
    # checked against its JWKS; unset, the API refuses every token. The token endpoint is
    # advertised in /fhir/metadata for clients to get tokens from.
    api_issuer: str | None = None
    api_jwks_url: str | None = None
    api_token_url: str | None = None
    # The ``aud`` the API's tokens must carry; default: {base_url}/fhir.
    api_audience: str | None = None
    # Where POST /fhir/Patient/{id}/$summarize pulls the record from (SMART Backend Services).
    api_ehr_base: str | None = None
    # The issuer's JWKS is fetched again for an unknown kid at most this often; an unknown kid
    # is remembered (and refused without a fetch) this long.
    api_jwks_min_refetch_s: float = Field(60.0, ge=0)
    api_unknown_kid_ttl_s: float = Field(300.0, ge=0)
    # Running $summarize jobs per API client; beyond it, 429 with Retry-After.
    api_max_jobs_per_client: int = Field(4, ge=1)
    # Open progress streams per browser session.
    max_event_streams: int = Field(4, ge=1)
    # Whole-record pulls through /api/record per session and minute (each is ~30 EHR requests).
    record_pulls_per_minute: int = Field(2, ge=1)

    @property
    def api_base(self) -> str:
        return f"{self.base_url.rstrip('/')}/fhir"

    def redirect_uri_for(self, issuer: str) -> str:
        """The callback of one registered EHR: each has its own, so that a code an EHR issued
        comes back where only that EHR's launch is completed (a mix-up defence for EHRs that
        send no ``iss`` with the code, RFC 9207)."""
        return f"{self.base_url.rstrip('/')}/callback/{callback_id(issuer)}"

    @property
    def launch_url(self) -> str:
        return f"{self.base_url.rstrip('/')}/launch"

    @property
    def https(self) -> bool:
        return urlparse(self.base_url).scheme == "https"

    @property
    def secure_cookies(self) -> bool:
        return urlparse(self.base_url).hostname not in {"127.0.0.1", "localhost", "::1"}
