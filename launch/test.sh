#!/usr/bin/env bash
# Set up, then run the linters, the static type check and the whole test suite: first every test
# but the real vLLM server's, in parallel; then that one alone, so that the server's CPU load does
# not slow the others (PROVENOTE_SKIP_VLLM=1 leaves it out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest -n 2 --dist loadgroup -m "not vllm" "$@"
if [ "${PROVENOTE_SKIP_VLLM:-0}" != 1 ]; then
  PROVENOTE_VLLM_PYTHON="$(bash launch/vllm_env.sh)"
  export PROVENOTE_VLLM_PYTHON
  .venv/bin/python -m pytest -m vllm tests/test_vllm.py
fi
