#!/usr/bin/env bash
# Set up, then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
