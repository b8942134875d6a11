"""The language-model interface the agents use, and strict JSON answers with a bounded retry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from pipeline.errors import ModelError


class ChatBackend(Protocol):
    name: str
    version: str

    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None) -> str:
        """The model's answer to a chat, as text; JSON matching ``schema`` where it can."""


class ModelOutputError(ModelError):
    """The model's answer could not be used (not JSON of the asked shape after the retries)."""


def ask_json(
    backend: ChatBackend,
    messages: list[dict[str, str]],
    required: Sequence[str],
    retries: int,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The model's JSON answer, parsed strictly; on a bad answer say why and ask again (bounded)."""
    conversation = list(messages)
    problem = ""
    for _ in range(retries + 1):
        answer = backend.complete(conversation, schema)
        try:
            parsed = json.loads(answer)
            if not isinstance(parsed, dict) or any(key not in parsed for key in required):
                raise ValueError(f"the object needs the keys {', '.join(required)}")
            return parsed
        except ValueError as error:
            problem = str(error)
            conversation += [
                {"role": "assistant", "content": answer},
                {
                    "role": "user",
                    "content": f"That was not valid: {problem}. Answer with the JSON object only.",
                },
            ]
    raise ModelOutputError(
        f"{backend.name}: no usable JSON after {retries + 1} answers ({problem})"
    )
