"""SMART scopes, v1 (``.read``/``.write``) and v2 (``.cruds``), read the same way everywhere.

A v2 scope may be granular (``patient/Observation.rs?category=laboratory``): it permits only part
of a type. Where Provenote is the resource server it cannot honour such restrictions, so a
restricted scope grants nothing there (``restricted_ok=False``, the default); where the EHR is the
resource server it enforces its own restrictions, and asking is allowed (``restricted_ok=True``).
"""

from __future__ import annotations

from collections.abc import Collection

LEVELS = ("patient", "user", "system")
# v1 permissions as the v2 letters they stand for.
_V1 = {"read": "rs", "write": "cud", "*": "cruds"}


def _matching(
    scope: str, resource_type: str, action: str, levels: Collection[str]
) -> list[tuple[str, bool]]:
    """(scope, restricted) for every scope that would permit the action, restricted or not."""
    found = []
    for item in scope.split():
        head, _, tail = item.partition("/")
        kind, _, permission = tail.partition(".")
        if head not in levels or kind not in {resource_type, "*"}:
            continue
        letters, restricted, _ = permission.partition("?")
        if action in _V1.get(letters, letters):
            found.append((item, bool(restricted)))
    return found


def granted(
    scope: str,
    resource_type: str,
    action: str,
    levels: Collection[str] = LEVELS,
    *,
    restricted_ok: bool = False,
) -> bool:
    """Whether the scopes permit ``action`` (one of ``c r u d s``) on the type at these levels."""
    return any(
        restricted_ok or not restricted
        for _, restricted in _matching(scope, resource_type, action, levels)
    )


def only_restricted(
    scope: str, resource_type: str, action: str, levels: Collection[str] = LEVELS
) -> bool:
    """Whether the action is permitted only by granular (restricted) scopes."""
    matches = _matching(scope, resource_type, action, levels)
    return bool(matches) and all(restricted for _, restricted in matches)
