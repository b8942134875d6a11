#!/usr/bin/env bash
# Set up, then run the linters, the static type check and the whole test suite: first every test
# that may share the machine, in parallel; then the load and timing-sensitive tests (marked
# `serial`) alone, so that neither load slows the other past its timeouts; then the real vLLM
# server's test alone, for its CPU load (PROVENOTE_SKIP_VLLM=1 leaves it out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

# pytest's exit 5 means the arguments selected no test of this phase: not a failure.
phase() {
  local status=0
  .venv/bin/python -m pytest "$@" || status=$?
  if [ "$status" != 0 ] && [ "$status" != 5 ]; then
    exit "$status"
  fi
}
phase -n 2 --dist loadgroup -m "not vllm and not serial" "$@"
phase -m "serial and not vllm" "$@"
if [ "${PROVENOTE_SKIP_VLLM:-0}" != 1 ]; then
  PROVENOTE_VLLM_PYTHON="$(bash launch/vllm_env.sh)"
  export PROVENOTE_VLLM_PYTHON
  phase -m vllm tests/smartapp/test_vllm.py
fi
