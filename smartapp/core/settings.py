"""Provenote's one settings object, read once from ``PROVENOTE_*`` environment variables.

``Settings`` is read at start-up (``serve``, ``worker``, the CLI) and passed down; it carries the
pipeline's fields too (it is a ``PipelineSettings``), so nothing below reads the environment.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from fhir_mapping.scope import INPATIENT_CLASSES
from fhir_mapping.write_plan import Strategy
from pipeline.errors import ProvenoteError
from pipeline.settings import PipelineSettings

ENV_PREFIX = "PROVENOTE_"
# Variables of the launch scripts and the test suite, not of the app: never reported unknown.
OTHER_PROVENOTE_VARIABLES = frozenset(
    {"PROVENOTE_TORCH_SPEC", "PROVENOTE_SKIP_VLLM", "PROVENOTE_VLLM_PYTHON"}
)

# evidence-only, smollm2, openai:URL#MODEL or transformers:DIR|FILE.gguf
# (``smartapp.core.language_models``).
SUMMARIZER_PATTERN = (
    r"evidence-only|smollm2|openai:(?P<url>https?://[^#\s]+)#(?P<model>\S+)"
    r"|transformers:(?P<dir>\S+)"
)
ClientAuth = Literal["public", "client_secret_basic", "private_key_jwt"]
SigningAlg = Literal["RS384", "ES384"]
# Which refresh scope a launch asks for: "auto" asks online_access where the server lists it,
# else offline_access where listed (SMART App Launch 2.2), so a session can outlive its first
# access token; "none" asks for no refresh token at all.
RefreshAccess = Literal["auto", "online_access", "offline_access", "none"]


class ConfigurationError(ProvenoteError):
    """The settings cannot work; the message names the variable and what it needs. Launching
    again cannot fix it: an operator must change the configuration."""

    status_code = 500


def normalise_issuer(iss: str) -> str:
    """An issuer as compared everywhere: without a trailing slash."""
    return iss.strip().rstrip("/")


class ClientRegistration(BaseModel):
    """How Provenote is registered with one EHR: its credentials are only ever sent there.

    Endpoints named here are trusted as they are; endpoints that discovery reports must lie on
    the issuer's own origin (a mix-up defence), so an EHR whose authorization server lives
    elsewhere names them here.
    """

    model_config = ConfigDict(extra="forbid")

    issuer: str
    client_id: str
    client_auth: ClientAuth = "public"
    client_secret: SecretStr | None = None
    # PEM private key for private_key_jwt; default: the app's own key (signing_key_file).
    signing_key_file: Path | None = None
    signing_alg: SigningAlg = "RS384"
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    jwks_uri: str | None = None
    # The ``iss`` of this EHR's id_tokens, when it is not the one discovery reports.
    openid_issuer: str | None = None
    # The clinical scopes to ask this EHR for, when it refuses a request holding any scope it
    # has not registered (e.g. ["patient/*.read"] for read-only); default: what the app needs.
    scopes: list[str] | None = None
    refresh: RefreshAccess = "auto"

    @model_validator(mode="after")
    def _normalised(self) -> ClientRegistration:
        self.issuer = normalise_issuer(self.issuer)
        if self.client_auth == "client_secret_basic" and self.client_secret is None:
            raise ValueError(f"{self.issuer}: client_secret_basic needs a client_secret")
        return self

    def named_origins(self) -> set[str]:
        """Origins this registration trusts beyond the issuer's own."""
        named = (self.authorization_endpoint, self.token_endpoint, self.jwks_uri)
        return {origin_of(url) for url in named if url}


def callback_id(issuer: str) -> str:
    """The path segment of an EHR's callback: stable for its issuer, and no secret."""
    return hashlib.sha256(normalise_issuer(issuer).encode("utf-8")).hexdigest()[:16]


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, with the default port made explicit."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    port = parsed.port or {"http": 80, "https": 443}.get(scheme, 0)
    return f"{scheme}://{(parsed.hostname or '').lower()}:{port}"


class Settings(PipelineSettings, BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    base_url: str = "http://127.0.0.1:8000"
    # The default registration, used for every issuer in ``allowed_issuers``.
    client_id: str = "provenote"
    client_auth: ClientAuth = "public"
    client_secret: SecretStr | None = None
    # PEM private key for private_key_jwt; generated under data_dir on first use when unset.
    signing_key_file: Path | None = None
    signing_alg: SigningAlg = "RS384"
    data_dir: Path = Path("data")
    # Where GGUF models are converted once for fast loading; default: data_dir/models.
    model_cache_dir: Path | None = None
    # SQLAlchemy async DSN; default: SQLite in data_dir. E.g. postgresql+asyncpg://user@host/db
    database_url: str | None = None
    job_workers: int = Field(2, ge=1, le=64)
    # `provenote serve` and `provenote worker` log JSON lines (or plain text) at this level.
    log_format: Literal["json", "text"] = "json"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Log the EHR's error answers verbatim (they can hold names and dates of birth): for a
    # debugging session only. Otherwise only their size, type and error code are logged.
    log_ehr_bodies: bool = False
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
    # Fernet key encrypting tokens at rest; else read from (or generated at) the file.
    token_encryption_key: SecretStr | None = None
    token_encryption_key_file: Path | None = None
    # Secret the CSRF tokens are derived from; else read from (or generated at) the file.
    app_secret: SecretStr | None = None
    app_secret_file: Path | None = None
    # Key of the edits export's editor pseudonyms; else read from (or generated at) the file.
    pseudonym_secret: SecretStr | None = None
    pseudonym_secret_file: Path | None = None
    # Sessions end after this long without a request, and this long after the launch.
    session_idle_s: int = Field(30 * 60, gt=0)
    session_max_s: int = Field(12 * 3600, gt=0)
    # fhirUser resource types that may review and sign drafts (and whose launches write back).
    reviewer_roles: list[str] = Field(default_factory=lambda: ["Practitioner"])
    # Encounter classes (v3 ActCode) a discharge summary is drafted for.
    inpatient_classes: list[str] = Field(default_factory=lambda: sorted(INPATIENT_CLASSES))
    # A draft left ``signing`` longer than this (its process died) is reconciled with the EHR.
    signing_timeout_s: float = Field(300.0, gt=0)
    # This installation's id, part of every written note's idempotency identifier; default:
    # generated once and kept in the database.
    installation_id: str | None = None
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
    http_timeout_s: float = Field(30.0, gt=0)
    # PEM file of the certificate authorities the EHRs' HTTPS certificates are checked against
    # (a hospital's own CA); default: the system's.
    ca_bundle: Path | None = None
    fhir_concurrency: int = Field(8, ge=1, le=64)
    fhir_max_retries: int = Field(4, ge=0, le=10)
    fhir_page_size: int = Field(100, ge=1, le=1000)
    # How far before admission the record pull reaches for baselines, social history and
    # recently ended problems and orders (active ones are pulled whatever their age).
    record_lookback_days: int = Field(365, ge=1)
    # Tokens are refreshed this long before they expire (at most half their lifetime).
    refresh_margin_s: int = Field(60, ge=0)
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

    @model_validator(mode="after")
    def _read_registrations(self) -> Settings:
        if self.registrations_file is not None:
            listed = json.loads(self.registrations_file.read_text(encoding="utf-8"))
            self.registrations = [
                *self.registrations,
                *(ClientRegistration.model_validate(item) for item in listed),
            ]
        self.allowed_issuers = [normalise_issuer(iss) for iss in self.allowed_issuers]
        if self.job_queue == "procrastinate" and not self.database_dsn.startswith("postgresql"):
            raise ValueError("job_queue procrastinate needs a PostgreSQL database_url")
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

    @property
    def database_dsn(self) -> str:
        return (
            self.database_url or f"sqlite+aiosqlite:///{(self.data_dir / 'provenote.db').resolve()}"
        )

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


def _is_structured(annotation: Any) -> bool:
    """A list, dict or model: pydantic-settings reads such a variable as JSON."""
    origin = typing.get_origin(annotation)
    if origin in {list, dict, tuple, set}:
        return True
    if origin is not None:
        return any(_is_structured(argument) for argument in typing.get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def variable_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One sentence per ``PROVENOTE_*`` variable that names no setting (a typo, an old name),
    with the closest known one."""
    known = [variable_name(name) for name in Settings.model_fields]
    problems = []
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX) or name.upper() in OTHER_PROVENOTE_VARIABLES:
            continue
        if name.upper() in known:
            continue
        fields = [known_name.removeprefix(ENV_PREFIX) for known_name in known]
        wanted = name.upper().removeprefix(ENV_PREFIX)
        closest = difflib.get_close_matches(wanted, fields, n=1, cutoff=0.6)
        hint = f"; did you mean {ENV_PREFIX}{closest[0]}?" if closest else ""
        problems.append(f"{name} is not a Provenote setting{hint}")
    return problems


def _explained(failure: ValidationError | SettingsError | ValueError) -> str:
    """What is wrong with the settings, one sentence per variable, never a traceback."""
    if isinstance(failure, ValidationError):
        lines = []
        for error in failure.errors():
            where = error["loc"][0] if error["loc"] else ""
            name = variable_name(str(where)) if where else "the settings"
            lines.append(f"{name}: {error['msg']}")
        return "; ".join(lines)
    text = str(failure)
    for field, info in Settings.model_fields.items():
        if f'"{field}"' in text and _is_structured(info.annotation):
            example = (
                '{"https://ehr.example.org/fhir": "composition"}'
                if typing.get_origin(info.annotation) is dict
                else '["https://ehr.example.org/fhir"]'
            )
            return (
                f"{variable_name(field)} must be JSON (a list or an object), not a plain value; "
                f"for example {variable_name(field)}='{example}'"
            )
    return text


def get_settings(*, strict: bool = False) -> Settings:
    """The settings as the environment gives them now. Each entry point (``serve``, ``worker``, a
    CLI command) reads them once as it starts and passes the object down. ``strict`` (the
    servers) also refuses unknown ``PROVENOTE_*`` variables. ConfigurationError says what is
    wrong in words an operator can act on."""
    if strict and (unknown := unknown_variables(os.environ)):
        raise ConfigurationError("; ".join(unknown))
    try:
        return Settings()
    except (ValidationError, SettingsError, ValueError) as failure:
        raise ConfigurationError(_explained(failure)) from None
