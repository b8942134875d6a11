#!/usr/bin/env bash
# The main job on the embedded defaults: set up, then build the evidence of the shipped sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
exec .venv/bin/provenote evidence --output data/evidence.json "$@"
