"""Clinical tables the rules need, shipped as data with their source and date.

Each table is a JSON file in ``pipeline/clinical/tables/`` (``source``, ``date``, ``codes`` by
code, and lower-case ``keywords`` matched in display names, for code systems the codes do not
cover). A deployment replaces a table by putting a file of the same name in
``PROVENOTE_TABLES_DIR``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pipeline.settings import PipelineSettings
from pipeline.text.rendering import plain_term


@dataclass(frozen=True, slots=True)
class CodeTable:
    name: str
    source: str
    date: str
    codes: frozenset[str]
    keywords: tuple[str, ...]
    extra: dict[str, Any]

    def matches(self, code: str | None, display: str | None) -> bool:
        """By code, else by a keyword in the display (unless an ``except_keywords`` entry is
        there too: "History of myocardial infarction" is no infarction now)."""
        if code is not None and code in self.codes:
            return True
        text = (display or "").lower()
        if any(word in text for word in self.extra.get("except_keywords", [])):
            return False
        return any(keyword in text for keyword in self.keywords)


def names_it(term: str, rule: Mapping[str, Any]) -> bool:
    """Whether a clinical term names what a table's rule is about: one of its ``keywords``,
    and none of its ``except_keywords`` ("History of", "Awaiting")."""
    text = plain_term(term).lower()
    if any(word in text for word in rule.get("except_keywords", [])):
        return False
    return any(keyword in text for keyword in rule["keywords"])


@cache
def _read(name: str, override_dir: Path | None) -> CodeTable:
    override = override_dir / f"{name}.json" if override_dir is not None else None
    if override is not None and override.is_file():
        raw = json.loads(override.read_text(encoding="utf-8"))
    else:
        shipped = resources.files("pipeline.clinical").joinpath(f"tables/{name}.json")
        raw = json.loads(shipped.read_text(encoding="utf-8"))
    known = {"source", "date", "codes", "keywords", "meaning"}
    return CodeTable(
        name=name,
        source=raw["source"],
        date=raw["date"],
        codes=frozenset(raw.get("codes", {})),
        keywords=tuple(keyword.lower() for keyword in raw.get("keywords", [])),
        extra={key: value for key, value in raw.items() if key not in known},
    )


def table(name: str, settings: PipelineSettings) -> CodeTable:
    """The table ``name``: the deployment's file if it has one, else the shipped one."""
    return _read(name, settings.tables_dir)
