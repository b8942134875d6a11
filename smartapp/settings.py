"""The app's settings, read once from ``PROVENOTE_APP_*`` environment variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ClientAuth = Literal["public", "client_secret_basic", "private_key_jwt"]


class AppSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROVENOTE_APP_", extra="ignore")

    base_url: str = "http://127.0.0.1:8000"
    client_id: str = "provenote"
    client_auth: ClientAuth = "public"
    client_secret: SecretStr | None = None
    # PEM private key for private_key_jwt; generated under data_dir on first use when unset.
    signing_key_file: Path | None = None
    signing_alg: Literal["RS384", "ES384"] = "RS384"
    data_dir: Path = Path("data")
    # SQLAlchemy async DSN; default: SQLite in data_dir. E.g. postgresql+asyncpg://user@host/db
    database_url: str | None = None
    job_workers: int = Field(2, ge=1, le=64)
    job_lease_s: float = Field(120.0, gt=0)
    # Per EHR (FHIR base URL): force a write-back strategy instead of reading it from the
    # CapabilityStatement: composition | document-reference | final-only | none.
    writeback_strategies: dict[str, str] = Field(default_factory=dict)
    # Empty: any issuer may launch the app. Otherwise only these FHIR base URLs.
    allowed_issuers: list[str] = Field(default_factory=list)
    offline_access: bool = False
    # Fernet key encrypting tokens at rest; generated under data_dir on first use when unset.
    token_encryption_key: SecretStr | None = None
    # Secret the CSRF tokens are derived from; generated under data_dir on first use when unset.
    app_secret: SecretStr | None = None
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
    http_timeout_s: float = Field(30.0, gt=0)
    fhir_concurrency: int = Field(8, ge=1, le=64)
    fhir_max_retries: int = Field(4, ge=0, le=10)
    fhir_page_size: int = Field(100, ge=1, le=1000)
    max_attachment_bytes: int = Field(20 * 1024 * 1024, gt=0)
    refresh_margin_s: int = Field(60, ge=0)

    @property
    def database_dsn(self) -> str:
        return (
            self.database_url or f"sqlite+aiosqlite:///{(self.data_dir / 'provenote.db').resolve()}"
        )

    @property
    def api_base(self) -> str:
        return f"{self.base_url.rstrip('/')}/fhir"

    @property
    def redirect_uri(self) -> str:
        return f"{self.base_url.rstrip('/')}/callback"

    @property
    def launch_url(self) -> str:
        return f"{self.base_url.rstrip('/')}/launch"

    @property
    def secure_cookies(self) -> bool:
        return urlparse(self.base_url).hostname not in {"127.0.0.1", "localhost", "::1"}


@lru_cache(maxsize=1)
def get_app_settings() -> AppSettings:
    return AppSettings()
