"""An EHR's key URL that hangs or fails holds no call for long: a fetch is bounded, a failure
is remembered with a back-off (calls are answered at once meanwhile), and keys read before keep
answering when a refresh fails."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from joserfc.jwk import ECKey, KeySet

from smartapp.core import jwks
from smartapp.core.jwks import FETCH_TIMEOUT_S, KeysUnavailableError, PublishedKeys
from smartapp.core.settings import Settings

URL = "https://ehr.example.org/cds-keys"


class KeyOwner:
    """The EHR's key URL: hangs, fails or answers, counting the requests it got."""

    def __init__(self) -> None:
        key = ECKey.generate_key("P-384", parameters={"kid": "k1"})
        self.published = KeySet([key]).as_dict(private=False)
        self.behaviour = "hang"
        self.requests = 0

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.behaviour == "hang":
            await asyncio.sleep(30)
        if self.behaviour == "fail":
            return httpx.Response(503)
        return httpx.Response(200, json=self.published)


def _keys(owner: KeyOwner, tmp_path: Path) -> tuple[PublishedKeys, httpx.AsyncClient]:
    http = httpx.AsyncClient(transport=httpx.MockTransport(owner))
    return PublishedKeys(URL, http, Settings(data_dir=tmp_path)), http


def test_a_hanging_key_url_is_given_up_quickly_and_not_asked_again_during_the_backoff(
    tmp_path: Path,
) -> None:
    owner = KeyOwner()

    async def calls() -> tuple[float, float, int]:
        keys, http = _keys(owner, tmp_path)
        async with http:
            started = time.monotonic()
            with pytest.raises(KeysUnavailableError):
                await keys.key_set("k1")
            first = time.monotonic() - started
            started = time.monotonic()
            for _ in range(5):
                with pytest.raises(KeysUnavailableError):
                    await keys.key_set("k1")
            return first, time.monotonic() - started, owner.requests

    first, next_five, requests = asyncio.run(calls())
    assert first < FETCH_TIMEOUT_S + 1.5
    assert next_five < 0.5 and requests == 1


def test_concurrent_calls_share_one_fetch(tmp_path: Path) -> None:
    owner = KeyOwner()

    async def calls() -> int:
        keys, http = _keys(owner, tmp_path)
        async with http:
            results = await asyncio.gather(
                *(keys.key_set("k1") for _ in range(8)), return_exceptions=True
            )
        assert all(isinstance(r, KeysUnavailableError) for r in results)
        return owner.requests

    assert asyncio.run(calls()) == 1


def test_keys_read_before_keep_answering_when_a_refresh_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = KeyOwner()
    owner.behaviour = "answer"
    clock = [1000.0]
    monkeypatch.setattr(jwks.time, "monotonic", lambda: clock[0])

    async def calls() -> tuple[int, int, int]:
        keys, http = _keys(owner, tmp_path)
        async with http:
            assert len(list(await keys.key_set("k1"))) == 1
            owner.behaviour = "fail"
            clock[0] += jwks.JWKS_TTL_S + 1  # stale: refreshed, and the refresh fails
            assert len(list(await keys.key_set("k1"))) == 1
            stale_requests = owner.requests
            clock[0] += 0.5  # within the back-off: not asked again
            await keys.key_set("k1")
            within = owner.requests
            clock[0] += jwks.MAX_BACKOFF_S  # the back-off passed: asked again
            owner.behaviour = "answer"
            await keys.key_set("k1")
            return stale_requests, within, owner.requests

    assert asyncio.run(calls()) == (2, 2, 3)
