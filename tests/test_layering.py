"""Imports flow one way: pipeline ← fhir_mapping ← smartapp ← launch (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

FORBIDDEN = {
    "pipeline": {"fhir_mapping", "smartapp", "launch", "fhir", "httpx", "litestar"},
    "fhir_mapping": {"smartapp", "launch"},
    "smartapp": {"launch"},
    "bench": {"tests"},
}
# fhir_mapping is pure: it maps resources, and never reads documents, runs OCR or a model, or
# reads settings (pipeline.build does the reading, with the settings it is given).
IMPURE_PIPELINE = {
    "pipeline.build",
    "pipeline.attachments",
    "pipeline.ocr",
    "pipeline.pdf",
    "pipeline.agent",
    "pipeline.agentic",
    "pipeline.focus",
    "pipeline.attention",
    "pipeline.llm",
    "pipeline.settings",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def imported_roots(path: Path) -> set[str]:
    return {module.split(".")[0] for module in imported_modules(path)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_never_imports_the_layers_above_it(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_roots(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
        if imported_roots(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_fhir_mapping_reads_no_document_and_runs_no_model() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_modules(path) & IMPURE_PIPELINE)
        for path in (ROOT / "fhir_mapping").rglob("*.py")
        if imported_modules(path) & IMPURE_PIPELINE
    }
    assert offenders == {}
