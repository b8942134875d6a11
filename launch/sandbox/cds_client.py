"""The sandbox EHR's CDS Hooks client: what a real EHR does when a clinician starts a discharge.

It discovers the app's services, fills the ``encounter-discharge`` service's prefetch, lends a
patient-scoped access token (fhirAuthorization) and signs each call's JWT (ES384, CDS Hooks 2.0)
with a key it publishes at ``/auth/cds-jwks``.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from launch.sandbox.authorization import AuthorizationServer, LaunchContext

DISCHARGE_HOOK = "encounter-discharge"
# What the chart lends the service: read the patient's record.
LENT_SCOPE = "patient/*.read"


def new_hook_key() -> ECKey:
    key = ECKey.generate_key("P-384", parameters={"alg": "ES384", "use": "sig"})
    key.ensure_kid()
    return key


def signed_hook_jwt(
    key: ECKey,
    issuer: str,
    audience: str,
    *,
    jti: str | None = None,
    lifetime_s: int = 60,
    subject: str = "sandbox-ehr",
) -> str:
    """A CDS Hooks call's JWT (also used by tests to sign calls the sandbox would not make)."""
    now = int(time.time())
    claims = {
        "iss": issuer,
        "sub": subject,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime_s,
        "jti": jti or secrets.token_urlsafe(16),
    }
    header = {"alg": "ES384", "kid": key.kid, "typ": "JWT"}
    return jwt.encode(header, claims, key, algorithms=["ES384"])


@dataclass(slots=True)
class HookAnswer:
    """What the service answered: its status and cards, or why there are none."""

    status: int
    cards: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    # How long the service took to answer the call (the hook's time budget), in seconds.
    answered_in_s: float = 0.0


@dataclass(slots=True)
class CdsClient:
    """The chart's CDS Hooks client; ``app_client_id`` is whom its tokens are lent to."""

    auth: AuthorizationServer
    fhir_base: str
    admin_token: str
    app_client_id: str = "provenote"
    key: ECKey = field(default_factory=new_hook_key)

    @property
    def issuer(self) -> str:
        return self.auth.issuer

    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)

    def lent_token(self, patient: str, encounter: str) -> dict[str, Any]:
        """fhirAuthorization: a short-lived token for the patient's record, for the app."""
        context = LaunchContext(f"Patient/{patient}", f"Encounter/{encounter}")
        return {
            "access_token": self.auth.access_token(self.app_client_id, LENT_SCOPE, context),
            "token_type": "Bearer",
            "expires_in": self.auth.access_token_ttl_s,
            "scope": LENT_SCOPE,
            "subject": self.app_client_id,
            "patient": patient,
        }

    async def _prefetch(
        self, http: httpx.AsyncClient, templates: dict[str, str], context: dict[str, str]
    ) -> dict[str, Any]:
        filled = {}
        for key, template in templates.items():
            query = template
            for name, value in context.items():
                query = query.replace(f"{{{{context.{name}}}}}", value)
            answer = await http.get(
                f"{self.fhir_base}/{query}", headers={"x-admin-token": self.admin_token}
            )
            filled[key] = answer.json() if answer.status_code == 200 else None
        return filled

    async def feedback(
        self,
        app_base: str,
        service_id: str,
        card: str,
        outcome: str,
        reason: dict[str, str] | None = None,
        comment: str | None = None,
    ) -> httpx.Response:
        """Tell the service what the clinician did with a card (CDS Hooks 2.0 feedback)."""
        entry: dict[str, Any] = {
            "card": card,
            "outcome": outcome,
            "outcomeTimestamp": datetime.now(UTC).isoformat(),
        }
        if outcome == "accepted":
            entry["acceptedSuggestions"] = []
        if reason is not None or comment is not None:
            entry["overrideReason"] = {
                key: value
                for key, value in (("reason", reason), ("userComment", comment))
                if value is not None
            }
        url = f"{app_base}/cds-services/{service_id}/feedback"
        token = signed_hook_jwt(self.key, self.issuer, url)
        async with httpx.AsyncClient(timeout=10) as http:
            return await http.post(
                url, json={"feedback": [entry]}, headers={"authorization": f"Bearer {token}"}
            )

    async def discharge(self, app_base: str, patient: str, encounter: str, user: str) -> HookAnswer:
        """Start the discharge: call the app's encounter-discharge service."""
        async with httpx.AsyncClient(timeout=10) as http:
            try:
                listed = (await http.get(f"{app_base}/cds-services")).json()
            except (httpx.HTTPError, ValueError) as failure:
                return HookAnswer(0, error=f"the app's CDS services could not be listed: {failure}")
            services = [s for s in listed.get("services", []) if s.get("hook") == DISCHARGE_HOOK]
            if not services:
                return HookAnswer(0, error="the app offers no encounter-discharge service")
            service = services[0]
            context = {"userId": user, "patientId": patient, "encounterId": encounter}
            url = f"{app_base}/cds-services/{service['id']}"
            body = {
                "hook": DISCHARGE_HOOK,
                "hookInstance": str(uuid.uuid4()),
                "fhirServer": self.fhir_base,
                "fhirAuthorization": self.lent_token(patient, encounter),
                "context": context,
                "prefetch": await self._prefetch(http, service.get("prefetch", {}), context),
            }
            token = signed_hook_jwt(self.key, self.issuer, url)
            started = time.perf_counter()
            answer = await http.post(url, json=body, headers={"authorization": f"Bearer {token}"})
            took = time.perf_counter() - started
        if answer.status_code != 200:
            return HookAnswer(answer.status_code, error=answer.text[:500], answered_in_s=took)
        return HookAnswer(200, cards=answer.json().get("cards", []), answered_in_s=took)
