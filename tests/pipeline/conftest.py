"""What the pipeline's tests share: its settings, as the defaults give them."""

from __future__ import annotations

import pytest

from pipeline.settings import PipelineSettings


@pytest.fixture
def settings() -> PipelineSettings:
    return PipelineSettings()
