"""Code run by a fresh interpreter: how a test sees what a command or a code path imports, which
the test session itself (having loaded far more) cannot show."""

from __future__ import annotations

import subprocess
import sys


def fresh_python(script: str) -> str:
    """What ``script`` prints, run by a new interpreter of this environment; it must succeed
    within two minutes."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    ).stdout
