"""How a SMART launch step fails: for the user to retry, or for an administrator to fix."""

from __future__ import annotations

import re

from smartapp.core.errors import LaunchError

OAUTH_ERROR_CODE = re.compile(r"[a-z_]{1,40}")


class SmartError(LaunchError):
    """A launch step failed; the message is safe to show to the user."""


class SetupError(SmartError):
    """The launch cannot work as Provenote or the EHR is configured: an administrator must
    change a registration; launching again will not help."""


# Token endpoint answers that say the registration is wrong, not the launch.
SETUP_ERROR_CODES = frozenset({"invalid_client", "unauthorized_client", "invalid_scope"})


def oauth_error_code(value: object) -> str | None:
    """An OAuth error code when it has the registered shape; anything else is not shown."""
    return value if isinstance(value, str) and OAUTH_ERROR_CODE.fullmatch(value) else None
