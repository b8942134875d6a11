"""Starting and stopping the whole sandbox EHR: FHIR server (Node), authorization server, chart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import httpx

from launch.sandbox.authorization import AuthorizationServer
from launch.sandbox.cds_client import CdsClient
from launch.sandbox.clients import RegisteredClient
from launch.sandbox.ehr_app import create_ehr_app
from launch.sandbox.seed import SeedReport, seed
from launch.sandbox.servers import SandboxError, ThreadedServer, free_port
from launch.sandbox.tls import loopback_certificate
from smartapp.core.registrations import ClientRegistration
from smartapp.core.settings import Settings

FHIR_SERVER_DIR = Path(__file__).parent / "fhir_server"
SAMPLES = Path(__file__).parents[1] / "samples"
PRACTITIONER_ID = "sandbox-physician"
# The client id the sandbox registers for the app's SMART Backend Services (pre-drafting, hook
# calls without a lent token), apart from the launch's client as EHRs keep them.
BACKEND_CLIENT_ID = "provenote-backend"


def ensure_npm_packages(folder: Path = FHIR_SERVER_DIR) -> None:
    """Install the FHIR server's pinned npm packages on first use (``npm ci``)."""
    if (folder / "node_modules" / "@medplum" / "fhir-router").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SandboxError("npm is not installed: the sandbox FHIR server needs Node.js 20 and npm")
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        check=True,
        timeout=600,
    )


def app_client(settings: Settings, issuer: str) -> RegisteredClient:
    """The sandbox's registration of the Provenote app, as the app is configured for the EHR
    whose FHIR base is ``issuer`` (its callback is that EHR's own)."""
    kinds = {
        "public": "public",
        "client_secret_basic": "secret",
        "private_key_jwt": "private_key_jwt",
    }
    return RegisteredClient(
        client_id=settings.client_id,
        kind=kinds[settings.client_auth],  # type: ignore[arg-type]
        redirect_uris=[settings.redirect_uri_for(issuer)],
        secret=settings.client_secret.get_secret_value() if settings.client_secret else None,
        jwks_url=f"{settings.base_url.rstrip('/')}/.well-known/jwks.json",
    )


class Sandbox:
    """The sandbox EHR on loopback; use as a context manager, or ``start()`` and ``stop()``."""

    def __init__(
        self,
        *,
        app_launch_url: str,
        seed_paths: list[Path] | None = None,
        access_token_ttl_s: int = 300,
        capability_profile: str = "composition",
        tls: bool = False,
    ) -> None:
        """``tls``: the chart and the authorization server over HTTPS on ``localhost`` (another
        site than an app on ``127.0.0.1``), with a certificate made for the run (``.tls``)."""
        self.app_launch_url = app_launch_url
        self.seed_paths = seed_paths or [SAMPLES]
        self.access_token_ttl_s = access_token_ttl_s
        self.capability_profile = capability_profile
        self.admin_token = os.urandom(16).hex()
        self.auth_port = free_port()
        self.fhir_port = free_port()
        self._workdir = tempfile.TemporaryDirectory(prefix="provenote-sandbox-")
        self.tls = loopback_certificate(Path(self._workdir.name)) if tls else None
        web = f"https://localhost:{self.auth_port}" if tls else f"http://127.0.0.1:{self.auth_port}"
        self.issuer = f"{web}/auth"
        self.fhir_base = f"http://127.0.0.1:{self.fhir_port}/fhir/R4"
        self.chart_url = f"{web}/chart"
        self.practitioner = f"Practitioner/{PRACTITIONER_ID}"
        self.auth = AuthorizationServer(
            issuer=self.issuer,
            fhir_base=self.fhir_base,
            practitioner=self.practitioner,
            access_token_ttl_s=access_token_ttl_s,
        )
        self.hooks = CdsClient(self.auth, self.fhir_base, self.admin_token)
        self.report = SeedReport()
        self._node: subprocess.Popen[bytes] | None = None
        self._web: ThreadedServer | None = None

    def register(self, client: RegisteredClient) -> None:
        self.auth.register(client)

    def registration(self, settings: Settings) -> ClientRegistration:
        """How the app, as configured, is registered with this EHR. The sandbox's authorization
        server runs on another port than its FHIR server, so the registration names its
        endpoints (discovered endpoints off the issuer's origin are refused otherwise)."""
        return ClientRegistration(
            issuer=self.fhir_base,
            client_id=settings.client_id,
            client_auth=settings.client_auth,
            client_secret=settings.client_secret,
            signing_key_file=settings.signing_key_file,
            signing_alg=settings.signing_alg,
            authorization_endpoint=f"{self.issuer}/authorize",
            token_endpoint=self.auth.token_url,
            jwks_uri=f"{self.issuer}/jwks",
            openid_issuer=self.issuer,
            backend_client_id=BACKEND_CLIENT_ID,
            cds_hooks=True,
            cds_issuer=self.issuer,
            cds_jwks_uri=f"{self.issuer}/cds-jwks",
        )

    def configure(self, settings: Settings) -> Settings:
        """``settings`` with this EHR allowed to launch the app, and the app registered here:
        its launch client, its backend-services client, and its CDS service (the chart's
        "Start discharge" calls it)."""
        launching = app_client(settings, self.fhir_base)
        self.register(launching)
        self.register(
            RegisteredClient(BACKEND_CLIENT_ID, "private_key_jwt", jwks_url=launching.jwks_url)
        )
        self.hooks.app_client_id = settings.client_id
        return settings.model_copy(update={"registrations": [self.registration(settings)]})

    def fhir_requests(self) -> int:
        """How many requests the FHIR server has had from anyone but the sandbox itself."""
        answer = httpx.get(
            f"http://127.0.0.1:{self.fhir_port}/__admin/requests",
            headers={"x-admin-token": self.admin_token},
        )
        answer.raise_for_status()
        return int(answer.json()["count"])

    def _start_fhir_server(self) -> None:
        ensure_npm_packages()
        node = shutil.which("node")
        if node is None:
            raise SandboxError("node is not installed: the sandbox FHIR server needs Node.js 20")
        key_file = Path(self._workdir.name) / "token-signing.pem"
        key_file.write_bytes(self.auth.public_pem())
        env = os.environ | {
            "PORT": str(self.fhir_port),
            "PUBLIC_BASE": self.fhir_base,
            "TOKEN_ISSUER": self.issuer,
            "TOKEN_PUBLIC_KEY": str(key_file),
            "AUTHORIZE_URL": f"{self.issuer}/authorize",
            "TOKEN_URL": f"{self.issuer}/token",
            "JWKS_URL": f"{self.issuer}/jwks",
            "ADMIN_TOKEN": self.admin_token,
            "CAPABILITY_PROFILE": self.capability_profile,
        }
        self._node = subprocess.Popen(
            [node, "server.mjs"], cwd=FHIR_SERVER_DIR, env=env, stdout=subprocess.PIPE
        )
        assert self._node.stdout is not None
        line = self._node.stdout.readline()
        try:
            json.loads(line)["listening"]
        except (ValueError, KeyError) as error:
            self.stop()
            raise SandboxError(f"the FHIR server did not start: {line!r}") from error

    def _seed(self) -> None:
        practitioner = {
            "resourceType": "Practitioner",
            "id": PRACTITIONER_ID,
            "name": [{"prefix": ["Dr."], "given": ["Sandra"], "family": "Box"}],
        }
        with httpx.Client(timeout=300) as client:
            client.put(
                f"{self.fhir_base}/{self.practitioner}",
                json=practitioner,
                headers={"x-admin-token": self.admin_token},
            ).raise_for_status()
            self.report = seed(client, self.fhir_base, self.admin_token, self.seed_paths)
        self.auth.default_patient = self.report.patients[0] if self.report.patients else None

    def start(self) -> Sandbox:
        self._start_fhir_server()
        self._seed()
        app = create_ehr_app(
            self.auth,
            fhir_base=self.fhir_base,
            admin_token=self.admin_token,
            app_launch_url=lambda: self.app_launch_url,
            hooks=self.hooks,
        )
        self._web = ThreadedServer(app, self.auth_port, self.tls)
        self._web.start()
        return self

    def set_fault(
        self,
        mode: str,
        count: int = 1,
        retry_after: int = 1,
        delay_ms: int = 0,
        match: str = "",
    ) -> None:
        """Make the FHIR server answer the next ``count`` requests (those starting with ``match``,
        e.g. ``POST /Composition``) with a fault: 429, 503, 500, slow or drop (tests)."""
        httpx.post(
            f"http://127.0.0.1:{self.fhir_port}/__admin/faults",
            json={
                "mode": mode,
                "count": count,
                "retry_after": retry_after,
                "delay_ms": delay_ms,
                "match": match,
            },
            headers={"x-admin-token": self.admin_token},
        ).raise_for_status()

    def stop(self) -> None:
        if self._web is not None:
            self._web.stop()
            self._web = None
        if self._node is not None:
            self._node.terminate()
            try:
                self._node.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._node.kill()
            self._node = None
        self._workdir.cleanup()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
