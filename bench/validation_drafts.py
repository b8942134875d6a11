"""Drafts of the validation stays, and their charts, for a blind reading.

``../shared/data/synthea/california_validation/`` holds inpatient stays no drafting rule was
written on. This writes, for each, the evidence-only draft (``drafts/<stay>.md``) and the whole
record as a plain chart (``charts/<stay>.md``, :mod:`bench.chart_extract`) under the folder given,
so that a reader who has seen neither the rules nor the code reads one beside the other as the
signing hospitalist would. The readings live in ``bench/reviews/``.

Run: ``python -m bench.validation_drafts OUT_DIR [--split california_validation]``.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.chart_extract import chart
from bench.synthea import bundles, read_bundle
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.summary_text import render_markdown
from smartapp.jobs.evidence import evidence_from_fhir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="california_validation")
    args = parser.parse_args()
    settings = PipelineSettings()
    for folder in ("drafts", "charts"):
        (args.out / folder).mkdir(parents=True, exist_ok=True)
    for path in bundles(args.split):
        name = path.name.split(".")[0][:8]
        bundle = read_bundle(path)
        state = evidence_from_fhir(bundle, settings=settings)
        summary = summarize_evidence(state, settings=settings)
        (args.out / "drafts" / f"{name}.md").write_text(render_markdown(summary, state))
        resources = [entry["resource"] for entry in bundle["entry"]]
        since = (state.stay().start if state.stay() else None) or datetime.now(UTC)
        detail_since = (since - timedelta(days=730)).date().isoformat()
        (args.out / "charts" / f"{name}.md").write_text(chart(resources, detail_since))
        print(name, len(summary.sentences()), "sentences")


if __name__ == "__main__":
    main()
