#!/usr/bin/env bash
# The main job on the embedded defaults: set up, build the evidence state of the shipped sample
# patient, then draft its discharge summary (evidence-only) as a FHIR bundle and for people.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
.venv/bin/provenote evidence --output data/evidence.json "$@"
.venv/bin/provenote summarize --output data/draft-bundle.json "$@"
exec .venv/bin/provenote summarize --format markdown "$@"
