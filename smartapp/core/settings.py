"""Provenote's one settings object, read once from ``PROVENOTE_*`` environment variables.

``Settings`` is read at start-up (``serve``, ``worker``, the CLI) and passed down; it carries the
pipeline's fields too (it is a ``PipelineSettings``), so nothing below reads the environment. Its
fields are defined by topic in ``smartapp.core.setting_groups`` (EHRs, storage, jobs, model, web;
drafting is ``PipelineSettings``), each a model a part of the app can be given alone.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from pipeline.errors import ProvenoteError
from pipeline.settings import PipelineSettings
from smartapp.core.setting_groups import (
    EhrSettings,
    JobSettings,
    ModelSettings,
    StorageSettings,
    WebSettings,
)

ENV_PREFIX = "PROVENOTE_"
# Variables of the launch scripts and the test suite, not of the app: never reported unknown.
OTHER_PROVENOTE_VARIABLES = frozenset(
    {"PROVENOTE_TORCH_SPEC", "PROVENOTE_SKIP_VLLM", "PROVENOTE_VLLM_PYTHON"}
)


class ConfigurationError(ProvenoteError):
    """The settings cannot work; the message names the variable and what it needs. Launching
    again cannot fix it: an operator must change the configuration."""

    status_code = 500


class Settings(
    PipelineSettings,
    EhrSettings,
    StorageSettings,
    JobSettings,
    ModelSettings,
    WebSettings,
    BaseSettings,
):
    """Every setting: the pipeline's (drafting), the EHRs', storage, jobs, the model and the web
    app's, each group defined in ``smartapp.core.setting_groups``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    @model_validator(mode="after")
    def _queue_needs_postgresql(self) -> Settings:
        if self.job_queue == "procrastinate" and not self.database_dsn.startswith("postgresql"):
            raise ValueError("job_queue procrastinate needs a PostgreSQL database_url")
        return self


def _is_structured(annotation: Any) -> bool:
    """A list, dict or model: pydantic-settings reads such a variable as JSON."""
    origin = typing.get_origin(annotation)
    if origin in {list, dict, tuple, set}:
        return True
    if origin is not None:
        return any(_is_structured(argument) for argument in typing.get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def variable_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One sentence per ``PROVENOTE_*`` variable that names no setting (a typo, an old name),
    with the closest known one."""
    known = [variable_name(name) for name in Settings.model_fields]
    problems = []
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX) or name.upper() in OTHER_PROVENOTE_VARIABLES:
            continue
        if name.upper() in known:
            continue
        fields = [known_name.removeprefix(ENV_PREFIX) for known_name in known]
        wanted = name.upper().removeprefix(ENV_PREFIX)
        closest = difflib.get_close_matches(wanted, fields, n=1, cutoff=0.6)
        hint = f"; did you mean {ENV_PREFIX}{closest[0]}?" if closest else ""
        problems.append(f"{name} is not a Provenote setting{hint}")
    return problems


def _explained(failure: ValidationError | SettingsError | ValueError) -> str:
    """What is wrong with the settings, one sentence per variable, never a traceback."""
    if isinstance(failure, ValidationError):
        lines = []
        for error in failure.errors():
            where = error["loc"][0] if error["loc"] else ""
            message = error["msg"].removeprefix("Value error, ")
            lines.append(f"{variable_name(str(where))}: {message}" if where else message)
        return "; ".join(lines)
    text = str(failure)
    for field, info in Settings.model_fields.items():
        if f'"{field}"' in text and _is_structured(info.annotation):
            example = (
                '{"https://ehr.example.org/fhir": "composition"}'
                if typing.get_origin(info.annotation) is dict
                else '["https://ehr.example.org/fhir"]'
            )
            return (
                f"{variable_name(field)} must be JSON (a list or an object), not a plain value; "
                f"for example {variable_name(field)}='{example}'"
            )
    return text


def get_settings() -> Settings:
    """The settings as the environment gives them now. Each entry point (``serve``, ``worker``, a
    CLI command) reads them once as it starts and passes the object down; the servers also
    refuse unknown ``PROVENOTE_*`` variables (``unknown_variables``, with every other problem:
    ``launch.cli.common.checked_settings``). ConfigurationError says what is wrong in words an
    operator can act on."""
    try:
        return Settings()
    except (ValidationError, SettingsError, ValueError) as failure:
        raise ConfigurationError(_explained(failure)) from None
