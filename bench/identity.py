"""Whose document is it? Every PDF of ../shared/data/pdfs against its own chart and another's.

Each document is read as the app reads it (text layer, else OCR) and checked twice
(``pipeline.ingestion.identity``). First against a chart whose Patient has the document's own
identifiers (built by hand from what the documents say: ``launch/identity_patients.py``). Then
against the chart of a patient it is not about. The notes of the 15 Synthea bundles are checked
against their own patients through the whole evidence build. Goals (issue #15): every other
patient's chart gets ``mismatch``, no own chart does, and no Synthea note is a ``mismatch``.

Run: ``python -m bench.identity``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from fhir.resources.R4B.patient import Patient

from fhir_mapping.demographics import chart_identity_of
from launch.identity_patients import DOCUMENT_PATIENTS, OTHER_PATIENT
from pipeline.ingestion.identity import ChartIdentity, check_identity
from pipeline.ingestion.pdf import read_pdf
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir


def chart_of(patient: dict[str, Any]) -> ChartIdentity:
    """The chart identity of a Patient given as JSON."""
    return chart_identity_of(Patient.model_validate(patient))


DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PDFS = DATA / "pdfs"
SYNTHEA = DATA / "synthea" / "california"


def main() -> None:
    if not PDFS.is_dir():
        print(f"identity: skipped, no {PDFS}")
        return
    settings = PipelineSettings()
    other = chart_of(OTHER_PATIENT)
    caught = false_mismatches = 0
    print(f"{'document':<64} {'own chart':<11} {'other chart':<11}")
    for name, patient in DOCUMENT_PATIENTS.items():
        pages, _ = read_pdf((PDFS / name).read_bytes(), settings)
        readable = [page for page in pages if page.has_text]
        own = check_identity(readable, chart_of(patient))
        theirs = check_identity(readable, other)
        caught += theirs.verdict == "mismatch"
        false_mismatches += own.verdict == "mismatch"
        ocr = " (OCR)" if any(page.ocr_applied for page in pages) else ""
        print(f"{name + ocr:<64} {own.verdict:<11} {theirs.verdict:<11}")
    total = len(DOCUMENT_PATIENTS)
    print(f"other patient's chart: {caught} of {total} mismatches caught ({caught / total:.0%})")
    print(f"own chart: {false_mismatches} false mismatches")
    verdicts: Counter[str] = Counter()
    bundles = sorted(
        path
        for path in SYNTHEA.glob("*.json")
        if not path.name.startswith(("hospitalInformation", "practitionerInformation", "metadata"))
    )
    for path in bundles:
        state = evidence_from_fhir(
            json.loads(path.read_text(encoding="utf-8")), settings=PipelineSettings()
        )
        verdicts.update(d.identity.verdict for d in state.documents if d.identity is not None)
    print(
        f"Synthea notes of {len(bundles)} bundles against their own patients: "
        + ", ".join(f"{verdict} {count}" for verdict, count in sorted(verdicts.items()))
    )


if __name__ == "__main__":
    main()
