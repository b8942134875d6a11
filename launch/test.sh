#!/usr/bin/env bash
# Set up, then run the linters, the static type check and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
