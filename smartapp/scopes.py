"""SMART scopes, v1 (``.read``/``.write``) and v2 (``.cruds``), read the same way everywhere."""

from __future__ import annotations

from collections.abc import Collection

LEVELS = ("patient", "user", "system")
# v1 permissions as the v2 letters they stand for.
_V1 = {"read": "rs", "write": "cud", "*": "cruds"}


def granted(scope: str, resource_type: str, action: str, levels: Collection[str] = LEVELS) -> bool:
    """Whether the scopes permit ``action`` (one of ``c r u d s``) on the type at these levels."""
    for item in scope.split():
        head, _, tail = item.partition("/")
        kind, _, permission = tail.partition(".")
        if head not in levels or kind not in {resource_type, "*"}:
            continue
        permission = permission.split("?")[0]
        if action in _V1.get(permission, permission):
            return True
    return False
