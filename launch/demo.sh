#!/usr/bin/env bash
# The main job on the embedded defaults: set up, then run the demo. The sandbox EHR (a real FHIR
# server and SMART authorization server) and the app start; Provenote is launched from the chart
# for a Synthea patient, pulls the record, drafts the summary, stores it (SQLite) and writes it
# back; the draft and its URLs are printed. Extra arguments go to `provenote demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
exec .venv/bin/provenote demo "$@"
