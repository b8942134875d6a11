"""Where an evidence-only draft of one stay spends its time: the top of a cProfile of building the
evidence and drafting (imports excluded: they are bench/startup.py's), so the next person who
makes drafting faster starts from the numbers.

Run: ``python -m bench.profile_draft [BUNDLE]`` (default: the largest Synthea bundle).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

from bench.synthea import bundles, read_bundle
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir

TOP = 25


def main(arguments: list[str] | None = None) -> None:
    given = arguments if arguments is not None else sys.argv[1:]
    path = Path(given[0]) if given else max(bundles(), key=lambda p: p.stat().st_size)
    data = read_bundle(path)
    settings = PipelineSettings()
    profile = cProfile.Profile()
    profile.enable()
    state = evidence_from_fhir(data, None, settings=settings)
    summarize_evidence(state, settings=settings)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(TOP)
    print(f"cProfile of one evidence-only draft: {path.name}")
    print(text.getvalue())


if __name__ == "__main__":
    main()
