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
    "pipeline.ingestion.attachments",
    "pipeline.ingestion.ocr",
    "pipeline.ingestion.pdf",
    "pipeline.clinical.agent",
    "pipeline.summarizing.agentic",
    "pipeline.summarizing.focus",
    "pipeline.backends.attention",
    "pipeline.backends.llm",
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


# pipeline's rooms in order, each importing only itself and those before it. errors, settings and
# build are single modules at the package's root; the others are sub-packages.
PIPELINE_LAYERS = (
    "errors",
    "text",
    "evidence",
    "settings",
    "clinical",
    "ingestion",
    "backends",
    "checking",
    "summarizing",
    "build",
)


def _pipeline_layer(path: Path) -> str:
    return path.relative_to(ROOT / "pipeline").with_suffix("").parts[0]


def _pipeline_imports(path: Path) -> set[str]:
    return {
        module.split(".")[1] for module in imported_modules(path) if module.startswith("pipeline.")
    }


@pytest.mark.parametrize("layer", PIPELINE_LAYERS)
def test_a_pipeline_room_imports_only_itself_and_the_rooms_before_it(layer: str) -> None:
    allowed = set(PIPELINE_LAYERS[: PIPELINE_LAYERS.index(layer) + 1])
    offenders = {
        str(path.relative_to(ROOT)): sorted(_pipeline_imports(path) - allowed)
        for path in (ROOT / "pipeline").rglob("*.py")
        if _pipeline_layer(path) == layer and _pipeline_imports(path) - allowed
    }
    assert offenders == {}


def test_every_pipeline_module_belongs_to_a_room() -> None:
    layers = {_pipeline_layer(path) for path in (ROOT / "pipeline").rglob("*.py")}
    assert layers - {"__init__"} == set(PIPELINE_LAYERS)


def _public_modules(room: Path) -> set[str]:
    """The names in a room's ``__all__``, read without importing the room."""
    tree = ast.parse((room / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            return set(ast.literal_eval(node.value))
    return set()


def test_outside_a_room_only_the_modules_its_init_names_are_imported() -> None:
    rooms = [path for path in (ROOT / "pipeline").iterdir() if (path / "__init__.py").exists()]
    public = {room.name: _public_modules(room) for room in rooms}
    offenders = {}
    for package in ("pipeline", "fhir_mapping", "smartapp", "launch", "bench"):
        for path in (ROOT / package).rglob("*.py"):
            home = _pipeline_layer(path) if package == "pipeline" else None
            private = sorted(
                module
                for module in imported_modules(path)
                if module.count(".") >= 2
                and module.split(".")[0] == "pipeline"
                and module.split(".")[1] in public
                and module.split(".")[1] != home
                and module.split(".")[2] not in public[module.split(".")[1]]
            )
            if private:
                offenders[str(path.relative_to(ROOT))] = private
    assert offenders == {}


# smartapp's slices, each importing only itself and those before it. The process's state
# (smartapp.state) is handed to controllers; services never reach for it. The app factory, the
# state, the worker and the operations routes assemble everything (smartapp/*.py).
SLICES = ("core", "ehr", "access", "launch", "drafts", "jobs", "api", "cds")


def _smartapp_imports(path: Path) -> set[str]:
    return {
        module.split(".")[1]
        for module in imported_modules(path)
        if module.startswith("smartapp.") and module.count(".") >= 1
    }


@pytest.mark.parametrize("slice_name", SLICES)
def test_a_slice_imports_only_itself_and_the_slices_before_it(slice_name: str) -> None:
    allowed = set(SLICES[: SLICES.index(slice_name) + 1])
    offenders = {}
    for path in (ROOT / "smartapp" / slice_name).rglob("*.py"):
        permitted = allowed | ({"state"} if path.stem.endswith("controllers") else set())
        wrong = _smartapp_imports(path) - permitted
        if wrong:
            offenders[str(path.relative_to(ROOT))] = sorted(wrong)
    assert offenders == {}


def test_only_the_assembly_sits_outside_the_slices() -> None:
    loose = {path.name for path in (ROOT / "smartapp").glob("*.py")}
    assert loose == {"__init__.py", "app.py", "state.py", "worker.py", "operations.py"}


def _reads_environment(path: Path) -> bool:
    """Subclasses BaseSettings, or reads ``os.environ`` / ``os.getenv`` for a value."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            isinstance(base, ast.Name) and base.id == "BaseSettings" for base in node.bases
        ):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = ast.unparse(node.func)
            if called in {"os.environ.get", "os.getenv"}:
                return True
    return False


def test_one_settings_object_reads_the_environment() -> None:
    """``smartapp.core.settings.Settings`` is read once and passed down; nothing else in the
    product reads configuration from the environment (the sandbox and test tools may)."""
    readers = {
        str(path.relative_to(ROOT))
        for package in ("pipeline", "fhir_mapping", "smartapp", "launch")
        for path in (ROOT / package).rglob("*.py")
        if "sandbox" not in path.parts and _reads_environment(path)
    }
    assert readers == {"smartapp/core/settings.py"}


DRAFT_TABLES = {"DraftRow", "DraftRevisionRow", "DraftEditRow", "WriteBackRow", "AuditRow"}


def _queries_draft_tables(path: Path) -> bool:
    """Builds a query on, reads by key, or creates a row of a draft table."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func)
        named = {ast.unparse(arg).split(".")[0] for arg in node.args}
        if called in DRAFT_TABLES:
            return True
        if called.split(".")[-1] in {"select", "update", "delete", "insert", "get"} and (
            named & DRAFT_TABLES
        ):
            return True
    return False


def test_only_the_drafts_slice_touches_the_draft_tables() -> None:
    """Drafts, revisions, edits, write-backs and their audit events have one owner
    (``smartapp.drafts.service.DraftService``); everyone else asks it."""
    touching = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "smartapp").rglob("*.py")
        if "migrations" not in path.parts and _queries_draft_tables(path)
    }
    assert touching and all(path.startswith("smartapp/drafts/") for path in touching)
