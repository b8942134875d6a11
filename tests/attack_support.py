"""An attacker's server for the security tests: it records every request it receives.

The tests drive an attack over real HTTP and then assert what this server did **not** receive
(no bearer token, no client secret, no request at all). The same server can play a malicious but
registered EHR: its routes answer SMART discovery, authorization, token and FHIR requests as a
test scripts them.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from launch.sandbox.run import Sandbox


@dataclass(frozen=True, slots=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Answer = tuple[int, dict[str, str], bytes]
Route = Callable[[Recorded], Answer]


def as_json(value: object, status: int = 200) -> Answer:
    return status, {"content-type": "application/json"}, json.dumps(value).encode()


@dataclass
class RecordingServer:
    """HTTP on 127.0.0.1 that keeps every request; answers from ``routes`` (by path, no query)."""

    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                seen = Recorded(
                    self.command,
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                recorder.requests.append(seen)
                route = recorder.routes.get(urlsplit(self.path).path)
                status, headers, body = (
                    route(seen) if route else as_json({"error": "not here"}, 404)
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _serve  # noqa: N815

            def log_message(self, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> RecordingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def saw(self, text: str) -> bool:
        """Whether ``text`` appeared anywhere in what was received (paths, headers, bodies)."""
        return any(
            text in request.path
            or any(text in value for value in request.headers.values())
            or text.encode() in request.body
            for request in self.requests
        )


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    server = RecordingServer().start()
    try:
        yield server
    finally:
        server.stop()


class FakeEhr:
    """A registered EHR played by a recording server: discovery, authorize, token, JWKS."""

    def __init__(self, server: RecordingServer) -> None:
        self.server = server
        self.base = f"{server.url}/fhir"
        self.issuer = server.url
        self.keys = [RSAKey.generate_key(2048, parameters={"alg": "RS256"}) for _ in range(2)]
        for key in self.keys:
            key.ensure_kid()
        self.smart_config: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{server.url}/authorize",
            "token_endpoint": f"{server.url}/token",
            "jwks_uri": f"{server.url}/jwks",
            "capabilities": ["launch-standalone", "permission-v2"],
            "code_challenge_methods_supported": ["S256"],
        }
        # What the next id_token says beyond the defaults, and whether its header names its key.
        self.claims: dict[str, Any] = {}
        self.send_kid = True
        self.token_answer: Callable[[Recorded], Answer] = lambda _: as_json(
            {"error": "invalid_grant"}, 400
        )
        server.routes["/fhir/.well-known/smart-configuration"] = lambda _: as_json(
            self.smart_config
        )
        server.routes["/token"] = lambda seen: self.token_answer(seen)
        server.routes["/jwks"] = lambda _: as_json(KeySet(list(self.keys)).as_dict(private=False))

    def id_token(self, client_id: str, **claims: Any) -> str:
        """An id_token signed with the second key (its kid in the header if ``send_kid``)."""
        key = self.keys[1]
        now = int(time.time())
        payload = {
            "iss": self.issuer,
            "aud": client_id,
            "sub": "doctor",
            "iat": now,
            "exp": now + 300,
            "fhirUser": f"{self.base}/Practitioner/doctor",
        } | claims
        header = {"alg": "RS256"} | ({"kid": key.kid} if self.send_kid else {})
        return jwt.encode(header, payload, key)

    def tokens(self, id_token: str | None = None) -> None:
        """Answer the token endpoint with an access token (and this id_token)."""
        answer = {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 300,
            "scope": "openid fhirUser patient/*.rs",
            "patient": "p-1",
        }
        if id_token:
            answer["id_token"] = id_token
        self.token_answer = lambda _: as_json(answer)


def seed_stay(sandbox: Sandbox, patient: str, *extra: dict[str, Any]) -> str:
    """A patient of their own in the sandbox, with one inpatient stay and ``extra`` resources
    (their ``{patient}`` and ``{encounter}`` placeholders filled in); the encounter id."""
    encounter = f"stay-{uuid.uuid4().hex[:8]}"
    resources = [
        {
            "resourceType": "Patient",
            "id": patient,
            "name": [{"family": "Test", "given": ["Security"]}],
            "gender": "female",
            "birthDate": "1960-01-01",
        },
        {
            "resourceType": "Encounter",
            "id": encounter,
            "status": "finished",
            "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "IMP"},
            "subject": {"reference": f"Patient/{patient}"},
            "period": {"start": "2024-03-01T08:00:00Z", "end": "2024-03-04T12:00:00Z"},
        },
        *(
            json.loads(
                json.dumps(item).replace("{patient}", patient).replace("{encounter}", encounter)
            )
            for item in extra
        ),
    ]
    with httpx.Client(headers={"x-admin-token": sandbox.admin_token}, timeout=30) as admin:
        for resource in resources:
            url = f"{sandbox.fhir_base}/{resource['resourceType']}/{resource['id']}"
            admin.put(url, json=resource).raise_for_status()
    return encounter
