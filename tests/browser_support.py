"""What the browser tests share: Debian's chromium (Playwright drives it by its path, never a
downloaded browser), and the marks that skip them where it is missing outside CI and run them on
one worker."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("PROVENOTE_CHROMIUM") or shutil.which("chromium")

BROWSER_MARKS = [
    pytest.mark.skipif(
        CHROMIUM is None and not os.environ.get("CI"),
        reason="Debian chromium is not installed (launch/setup.sh installs it)",
    ),
    # One worker runs the browser tests, on one shared Chromium.
    pytest.mark.xdist_group("browser"),
]
