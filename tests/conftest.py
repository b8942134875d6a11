"""Shared test configuration: where the third-party data lives, and the pipeline settings."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SYNTHEA = SHARED_DATA / "synthea" / "california"
PDFS = SHARED_DATA / "pdfs"
# What the core tests need ships in tests/data (its README): a plain clone passes without ../shared.
TEST_DATA = ROOT / "tests" / "data"
SAMPLE_PDF = TEST_DATA / "UD_sample.pdf"
ARTIFACTS = ROOT / "test-artifacts"


def synthea_bundles() -> list[Path]:
    if not SYNTHEA.is_dir():
        return []
    return sorted(
        path
        for path in SYNTHEA.glob("*.json")
        if not path.name.startswith(("hospitalInformation", "practitionerInformation", "metadata"))
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests on ../shared/data skip on a user's clone, but must run in CI."""
    if SHARED_DATA.is_dir():
        return
    if os.environ.get("CI"):
        raise pytest.UsageError(f"CI needs the shared data at {SHARED_DATA}")
    skip = pytest.mark.skip(reason=f"no shared data at {SHARED_DATA}")
    for item in items:
        if "shared_data" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sandbox():
    """The sandbox EHR with the shipped sample patients, on loopback, for this test worker."""
    from launch.sandbox.run import Sandbox

    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        yield box


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database (SQLAlchemy URL), dropped afterwards."""
    yield from fresh_postgres()


def fresh_postgres() -> Iterator[str]:
    """A fresh PostgreSQL database; skipped where there is no PostgreSQL, except in CI."""
    from launch.sandbox.cluster import POSTGRES_ADMIN, temporary_postgres

    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(temporary_postgres())
        except (OSError, asyncpg.PostgresError) as error:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"no PostgreSQL at {POSTGRES_ADMIN}: {error}")
        yield url
