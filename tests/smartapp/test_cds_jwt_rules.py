"""The EHR's hook JWT, rules a specification-minded client checks: a JWT's lifetime runs from
its ``iat``, a ``jti`` is remembered for as long as its JWT could be accepted, and a lent
``fhirAuthorization`` may omit ``subject`` and spell its token type in any case."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from smartapp.cds.caller import CLOCK_SKEW_S, HookRefusedError, _checked_claims, _first_use
from smartapp.cds.hook_request import HookRequest
from smartapp.core.db import Database

AUDIENCE = "https://provenote.example/cds-services/discharge"


def _claims(issued_ago_s: int, expires_in_s: int) -> dict[str, object]:
    now = int(time.time())
    return {"aud": AUDIENCE, "iat": now - issued_ago_s, "exp": now + expires_in_s, "jti": "j1"}


def test_a_jwt_issued_long_ago_has_lived_too_long_even_with_minutes_left() -> None:
    with pytest.raises(HookRefusedError, match="five minutes"):
        _checked_claims(_claims(issued_ago_s=3600, expires_in_s=120), AUDIENCE)
    expires, jti = _checked_claims(_claims(issued_ago_s=10, expires_in_s=120), AUDIENCE)
    assert jti == "j1" and expires > time.time()


def test_a_jti_is_remembered_until_its_jwt_can_no_longer_be_accepted(tmp_path: Path) -> None:
    """A JWT expired 10 s ago is still accepted (the clock skew allows 30 s): its jti must
    still be known, else it is replayable for the rest of the skew."""

    async def twice() -> tuple[bool, bool]:
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'hooks.db'}")
        await database.prepare(True)
        try:
            expired = time.time() - 10
            assert CLOCK_SKEW_S > 10
            first = await _first_use(database, "https://ehr.example", "j-replayed", expired)
            again = await _first_use(database, "https://ehr.example", "j-replayed", expired)
        finally:
            await database.dispose()
        return first, again

    assert asyncio.run(twice()) == (True, False)


def _body(authorization: dict[str, object]) -> dict[str, object]:
    return {
        "hook": "encounter-discharge",
        "hookInstance": "d1f1",
        "fhirServer": "https://ehr.example/fhir",
        "fhirAuthorization": authorization,
        "context": {"userId": "Practitioner/p1", "patientId": "p1", "encounterId": "e1"},
    }


def test_a_lent_token_without_subject_and_with_a_lower_case_type_is_accepted() -> None:
    authorization = {
        "access_token": "token",
        "token_type": "bearer",
        "expires_in": 300,
        "scope": "patient/*.read",
    }
    request = HookRequest.model_validate(_body(authorization))
    assert request.fhir_authorization is not None
    assert request.fhir_authorization.subject is None
    with pytest.raises(ValueError, match="Bearer"):
        HookRequest.model_validate(_body(authorization | {"token_type": "MAC"}))
