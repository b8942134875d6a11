#!/usr/bin/env bash
# Set up, then run the linters, the static type check and the whole test suite (including the
# launched app against a real vLLM server; PROVENOTE_SKIP_VLLM=1 leaves that test out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
if [ "${PROVENOTE_SKIP_VLLM:-0}" != 1 ]; then
  PROVENOTE_VLLM_PYTHON="$(bash launch/vllm_env.sh)"
  export PROVENOTE_VLLM_PYTHON
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
