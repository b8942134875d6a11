"""What the evidence-only draft of every Synthea stay holds, for a physician's eye.

For each of the 15 bundles in ``../shared/data/synthea/california/`` (the default stay: the most
recent inpatient one, else the most recent encounter): the episode's encounters, sentences,
flagged sentences, sections that say "Not documented", abnormal results found, and the time to
build the evidence and draft against only parsing the bundle (the floor); then, per stay, the
error classes a signing hospitalist found (``bench.draft_errors``: all should be 0) with the
citations per line and the citations' share of the words.

Run: ``python -m bench`` (all benchmarks) or ``python -m bench.drafts``.
"""

from __future__ import annotations

import json
import time

from bench import draft_errors
from bench.synthea import bundles
from fhir_mapping.resources import index_resources
from pipeline.clinical.results import ABNORMAL
from pipeline.evidence.model import LabResultAttributes
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir


def main() -> None:
    paths = bundles()
    summarize_evidence(
        evidence_from_fhir(json.loads(paths[0].read_bytes()), settings=PipelineSettings()),
        settings=PipelineSettings(),
    )  # load FOCUS once
    print("Evidence-only drafts of the Synthea stays")
    print(
        "| stay | class | episode | sentences | flagged | not documented | abnormal results "
        "| draft / parse |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        data = json.loads(path.read_bytes())
        started = time.perf_counter()
        index_resources(data)
        floor = time.perf_counter() - started
        started = time.perf_counter()
        state = evidence_from_fhir(data, settings=PipelineSettings())
        summary = summarize_evidence(state, settings=PipelineSettings())
        spent = time.perf_counter() - started
        stay = next(f.attributes for f in state.facts["encounter"] if f.attributes.kind == "stay")
        sentences = summary.sentences()
        empty = [s.spec.title for s in summary.sections if not s.sentences]
        abnormal = sum(
            isinstance(f.attributes, LabResultAttributes)
            and not f.attributes.baseline
            and f.attributes.flag in ABNORMAL
            for f in state.facts["lab_result"]
        )
        print(
            f"| {path.name[:8]} | {stay.class_code} | {len(state.episode)} | {len(sentences)} "
            f"| {sum(s.flagged for s in sentences)} | {len(empty)} ({', '.join(empty)}) "
            f"| {abnormal} | {spent / floor:.1f}x |"
        )
    draft_errors.main()


if __name__ == "__main__":
    main()
