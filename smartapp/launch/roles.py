"""Who launched: the user's FHIR identity, and whether they may review, sign and write."""

from __future__ import annotations

from smartapp.access.sessions import LaunchContext
from smartapp.core.settings import Settings


def _user_reference(fhir_user: str | None) -> tuple[str, str] | None:
    """(resource type, id) of the user; fhirUser may be an absolute URL."""
    parts = (fhir_user or "").rstrip("/").split("/")
    return (parts[-2], parts[-1]) if len(parts) >= 2 and parts[-2] and parts[-1] else None


def practitioner_reference(fhir_user: str | None) -> str | None:
    """``Practitioner/{id}`` when the user is a Practitioner."""
    found = _user_reference(fhir_user)
    return f"Practitioner/{found[1]}" if found and found[0] == "Practitioner" else None


def may_review(settings: Settings, context: LaunchContext) -> bool:
    """Whether the launched user may change and sign drafts, and so write to the chart."""
    found = _user_reference(context.fhir_user)
    return found is not None and found[0] in settings.reviewer_roles
