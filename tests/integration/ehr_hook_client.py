"""An EHR's CDS Hooks client, written from the CDS Hooks 2.0 specification alone: it discovers
the services, lends a token, fills the prefetch, signs each request's JWT (ES384 or RS384, with
``kid`` and ``jku`` in the header as the reference sandbox does) and publishes its keys at
``jku`` from a small HTTP server. Tests bend it (another audience, an old ``iat``, a
reused ``jti``, a key published elsewhere, a key URL that hangs) to see what the service refuses.
Nothing here imports the app.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from tests.attack_support import Answer, Recorded, RecordingServer, as_json, recording_server

Algorithm = Literal["ES384", "RS384"]


def new_key(alg: Algorithm) -> ECKey | RSAKey:
    parameters = {"alg": alg, "use": "sig"}
    key: ECKey | RSAKey = (
        ECKey.generate_key("P-384", parameters=parameters)
        if alg == "ES384"
        else RSAKey.generate_key(2048, parameters=parameters)
    )
    key.ensure_kid()
    return key


@dataclass(frozen=True)
class KeyUrl:
    """Where keys are published, and how often they were asked for."""

    url: str
    server: RecordingServer

    @property
    def asked(self) -> int:
        return len(self.server.requests)


@contextmanager
def published(*keys: ECKey | RSAKey, hang_s: float = 0.0) -> Iterator[KeyUrl]:
    """Serve ``keys`` as a JWKS (after ``hang_s``), until the block ends."""

    def jwks(_: Recorded) -> Answer:
        time.sleep(hang_s)
        return as_json(KeySet(list(keys)).as_dict(private=False))

    with recording_server() as server:
        server.routes["/jwks.json"] = jwks
        yield KeyUrl(f"{server.url}/jwks.json", server)


@dataclass
class EhrHookClient:
    """One EHR calling one CDS service; ``jku`` is where ``key`` is published."""

    issuer: str
    fhir_server: str
    key: ECKey | RSAKey
    jku: str
    sent: list[str] = field(default_factory=list)

    def jwt_for(
        self,
        audience: str,
        *,
        issued_ago_s: int = 0,
        lifetime_s: int = 60,
        jti: str | None = None,
        key: ECKey | RSAKey | None = None,
        jku: str | None = None,
    ) -> str:
        """The request's JWT (CDS Hooks 2.0: iss, aud, exp, iat, jti; kid and jku in the
        header); every argument bends one rule."""
        signer = key or self.key
        issued = int(time.time()) - issued_ago_s
        claims = {
            "iss": self.issuer,
            "aud": audience,
            "iat": issued,
            "exp": issued + lifetime_s,
            "jti": jti or secrets.token_urlsafe(16),
        }
        algorithm = str(signer.get("alg"))
        header = {"alg": algorithm, "typ": "JWT", "kid": signer.kid, "jku": jku or self.jku}
        token = jwt.encode(header, claims, signer, algorithms=[algorithm])
        self.sent.append(claims["jti"])  # type: ignore[arg-type]
        return token

    def discover(self, base: str) -> dict[str, Any]:
        (service,) = [
            s
            for s in httpx.get(f"{base}/cds-services", timeout=10).json()["services"]
            if s["hook"] == "encounter-discharge"
        ]
        return dict(service)

    def call(
        self,
        base: str,
        service: dict[str, Any],
        context: dict[str, str],
        authorization: dict[str, Any] | None,
        prefetch: dict[str, Any],
        token: str | None = None,
    ) -> httpx.Response:
        """POST the hook; ``token`` replaces the JWT this client would sign."""
        url = f"{base}/cds-services/{service['id']}"
        body: dict[str, Any] = {
            "hook": "encounter-discharge",
            "hookInstance": str(uuid.uuid4()),
            "context": context,
            "prefetch": prefetch,
        }
        if authorization is not None:
            body |= {"fhirServer": self.fhir_server, "fhirAuthorization": authorization}
        bearer = token or self.jwt_for(url)
        return httpx.post(url, json=body, headers={"authorization": f"Bearer {bearer}"}, timeout=30)

    def feedback(
        self, base: str, service: dict[str, Any], card: str, outcome: str
    ) -> httpx.Response:
        url = f"{base}/cds-services/{service['id']}/feedback"
        entry = {
            "card": card,
            "outcome": outcome,
            "outcomeTimestamp": datetime.now(UTC).isoformat(),
        }
        headers = {"authorization": f"Bearer {self.jwt_for(url)}"}
        return httpx.post(url, json={"feedback": [entry]}, headers=headers, timeout=30)
