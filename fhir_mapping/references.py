"""Rewriting references inside a resource: the one place a ``urn:uuid`` becomes a served id."""

from __future__ import annotations

from typing import Any


def rewrite_references(value: Any, targets: dict[str, str]) -> Any:
    """A deep copy of ``value`` whose ``reference`` strings found in ``targets`` are replaced."""
    if isinstance(value, list):
        return [rewrite_references(item, targets) for item in value]
    if isinstance(value, dict):
        rewritten = {key: rewrite_references(item, targets) for key, item in value.items()}
        if rewritten.get("reference") in targets:
            rewritten["reference"] = targets[rewritten["reference"]]
        return rewritten
    return value
