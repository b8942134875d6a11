"""A plain clone passes its own test command: every test that reaches the third-party data in
``../shared/data`` is marked ``shared_data`` (and so skips without it).

The test modules are read as source: a test reaches the shared data when it, a fixture it takes,
a decorator on it, or a function it calls (in its module or imported from another test module)
names ``SHARED_DATA``, ``PDFS``, ``SYNTHEA`` or ``synthea_bundles``, or a module-level name made
from them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import ROOT

TESTS = ROOT / "tests"
SHARED = frozenset({"SHARED_DATA", "PDFS", "SYNTHEA", "synthea_bundles"})


@dataclass
class Module:
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)  # local name → tests module
    reaching: set[str] = field(default_factory=set)  # names that reach the shared data


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_fixture(function: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in function.decorator_list)


def _marked(node: ast.AST) -> bool:
    return "shared_data" in ast.unparse(node)


def _modules(folder: Path) -> dict[str, Module]:
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = Module(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                for alias in node.names:
                    module.imported[alias.asname or alias.name] = node.module or ""
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                module.functions[node.name] = node
        modules["tests." + ".".join(path.relative_to(folder).with_suffix("").parts)] = module
    return modules


def _spread(modules: dict[str, Module]) -> None:
    """Mark, to a fixpoint, every module-level name and function that reaches the shared data."""
    fixtures = {f for m in modules.values() for f, fn in m.functions.items() if _is_fixture(fn)}
    nowhere = Module(ast.Module([], []))
    changed = True
    while changed:
        changed = False
        reaching_fixtures = {f for m in modules.values() for f in m.reaching if f in fixtures}
        for module in modules.values():
            reaching = SHARED | module.reaching
            reaching |= {
                local
                for local, source in module.imported.items()
                if local in modules.get(source, nowhere).reaching
            }
            for node in module.tree.body:
                if isinstance(node, ast.FunctionDef):
                    uses = _names(node) & reaching
                    if node.name.startswith("test") or _is_fixture(node):
                        uses |= {a.arg for a in node.args.args} & reaching_fixtures
                    targets = {node.name}
                elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    uses = _names(node.value) & reaching
                    targets = _names(node) - _names(node.value)
                else:
                    continue
                if uses and not targets <= module.reaching:
                    module.reaching |= targets
                    changed = True


def unmarked_tests_reaching_shared_data(folder: Path) -> list[str]:
    modules = _modules(folder)
    _spread(modules)
    unmarked = []
    for name, module in modules.items():
        module_marked = any(
            isinstance(node, ast.Assign) and _names(node) & {"pytestmark"} and _marked(node.value)
            for node in module.tree.body
        )
        for function in module.functions.values():
            if (
                function.name.startswith("test")
                and function.name in module.reaching
                and not module_marked
                and not any(_marked(d) for d in function.decorator_list)
            ):
                unmarked.append(f"{name}::{function.name}")
    return unmarked


def test_every_test_that_reads_the_shared_data_is_marked_shared_data() -> None:
    assert unmarked_tests_reaching_shared_data(TESTS) == []


def test_the_check_finds_a_test_that_reads_the_shared_data_through_a_helper(
    tmp_path: Path,
) -> None:
    (tmp_path / "support.py").write_text(
        "from tests.conftest import PDFS\n"
        "SAMPLE = PDFS / 'x.pdf'\n"
        "def read():\n    return SAMPLE.read_bytes()\n",
        encoding="utf-8",
    )
    (tmp_path / "test_a.py").write_text(
        "import pytest\n"
        "from tests.support import read\n"
        "@pytest.fixture\ndef pdf():\n    return read()\n"
        "def test_through_a_fixture(pdf):\n    assert pdf\n"
        "def test_through_a_call():\n    assert read()\n"
        "@pytest.mark.shared_data\ndef test_marked():\n    assert read()\n"
        "def test_elsewhere():\n    assert True\n",
        encoding="utf-8",
    )
    assert unmarked_tests_reaching_shared_data(tmp_path) == [
        "tests.test_a::test_through_a_fixture",
        "tests.test_a::test_through_a_call",
    ]
