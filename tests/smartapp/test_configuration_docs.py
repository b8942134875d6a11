"""docs/configuration.md is the one page that names every setting: an operator who reads it
finds each PROVENOTE_* variable the app reads, and none it does not."""

from __future__ import annotations

import re

from smartapp.core.settings import OTHER_PROVENOTE_VARIABLES, Settings, variable_name
from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_every_setting_is_on_the_configuration_page() -> None:
    # A row may name a second variable by its tail: `PROVENOTE_A_B` / `…_A_C`.
    missing = [
        variable_name(field) for field in Settings.model_fields if f"_{field.upper()}`" not in PAGE
    ]
    assert missing == []


def test_the_configuration_page_names_no_variable_the_app_does_not_read() -> None:
    known = {variable_name(field) for field in Settings.model_fields} | OTHER_PROVENOTE_VARIABLES
    named = set(re.findall(r"PROVENOTE_[A-Z0-9_]+[A-Z0-9]", PAGE))
    assert sorted(named - known) == []
