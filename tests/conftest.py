"""Shared test configuration: where the third-party data lives, and the pipeline settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.settings import PipelineSettings

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SYNTHEA = SHARED_DATA / "synthea" / "california"
PDFS = SHARED_DATA / "pdfs"
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


@pytest.fixture
def settings() -> PipelineSettings:
    return PipelineSettings()


@pytest.fixture(scope="session")
def sandbox():
    """The sandbox EHR with the shipped sample patients, on loopback, for this test worker."""
    from launch.sandbox.run import Sandbox

    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        yield box
