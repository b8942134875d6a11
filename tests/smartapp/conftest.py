"""What the app's tests share: both databases, the review sandbox (a patient whose note is full
of markup) and the app running against it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fresh_postgres


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None: the default SQLite file; else a fresh PostgreSQL database, dropped afterwards."""
    if request.param == "sqlite":
        yield None
        return
    yield from fresh_postgres()


@pytest.fixture(scope="module")
def review_sandbox():
    """A sandbox per module in which one patient has a note full of markup (review tests)."""
    from tests.review_support import hostile_sandbox

    with hostile_sandbox() as box:
        yield box


@pytest.fixture
def app(review_sandbox, tmp_path: Path):
    """The app against the review sandbox (review and browser tests), on a fresh SQLite file."""
    from tests.smart_support import running_app

    with running_app(review_sandbox, tmp_path) as running:
        yield running
