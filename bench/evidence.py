"""Evidence-building cost against its floor, and PDF ingestion speed with and without OCR.

For each Synthea bundle: the median time of ``evidence_from_fhir`` (parse, scope, map, ingest notes,
agent loop) divided by the median time of only parsing and validating the same resources with
fhir.resources (``index_resources``), the floor no mapper can beat. For PDFs: pages per second
through the text layer, and through OCR, and their ratio.

Run: ``python -m bench`` (all benchmarks) or ``python -m bench.evidence``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from fhir_mapping.resources import index_resources
from pipeline.ingestion.attachments import read_attachment
from pipeline.settings import PipelineSettings
from smartapp.jobs.evidence import evidence_from_fhir

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SAMPLES = ROOT / "launch" / "samples"
TEXT_PDFS = [
    "hl7/UD_sample.pdf",
    "hl7/McBee_L1_20151116_Embedded.pdf",
    "jsl/PDF_Deid_Deidentification_0.pdf",
]
SCANNED_PDFS = ["jsl/PDF_Deid_Deidentification_Medium_0.pdf"]


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bundles() -> list[Path]:
    folder = SHARED / "synthea" / "california"
    found = sorted(p for p in folder.glob("*-*-*-*-*.json")) if folder.is_dir() else []
    return found or sorted(SAMPLES.glob("*.json"))


def bench_bundles(repeats: int = 5) -> None:
    print("Evidence state vs parse-and-validate floor (median of", repeats, "runs)")
    print(f"{'bundle':<10} {'resources':>9} {'floor ms':>9} {'build ms':>9} {'ratio':>6}")
    ratios = []
    for path in bundles():
        data = json.loads(path.read_bytes())
        parsed = len(index_resources(data).resources)
        floor = median_seconds(lambda data=data: index_resources(data), repeats)
        build = median_seconds(
            lambda data=data: evidence_from_fhir(data, settings=PipelineSettings()), repeats
        )
        ratios.append(build / floor)
        print(
            f"{path.name[:8]:<10} {parsed:>9} {floor * 1e3:>9.1f} {build * 1e3:>9.1f} "
            f"{build / floor:>6.2f}"
        )
    print(f"{'median':<10} {'':>9} {'':>9} {'':>9} {statistics.median(ratios):>6.2f}\n")


def pages_per_second(paths: list[Path], settings: PipelineSettings) -> tuple[int, float]:
    start = time.perf_counter()
    pages = 0
    for path in paths:
        pages += len(read_attachment(path.read_bytes(), "application/pdf", settings).pages)
    return pages, pages / (time.perf_counter() - start)


def bench_pdfs() -> None:
    pdfs = SHARED / "pdfs"
    if not pdfs.is_dir():
        print("PDF ingestion: skipped, no ../shared/data/pdfs\n")
        return
    settings = PipelineSettings()
    text_pages, text_rate = pages_per_second([pdfs / p for p in TEXT_PDFS], settings)
    ocr_pages, ocr_rate = pages_per_second([pdfs / p for p in SCANNED_PDFS], settings)
    print("PDF ingestion")
    print(f"  text layer: {text_pages} pages, {text_rate:.1f} pages/s")
    print(f"  OCR at {settings.ocr_dpi} dpi: {ocr_pages} pages, {ocr_rate:.2f} pages/s")
    print(f"  OCR page costs {text_rate / ocr_rate:.0f}x a text-layer page\n")


def main() -> None:
    bench_bundles()
    bench_pdfs()


if __name__ == "__main__":
    main()
