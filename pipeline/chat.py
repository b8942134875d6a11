"""The language-model interface the agents use, strict JSON answers with a bounded retry, and
the per-draft count of what the model was asked (calls and tokens)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pipeline.errors import ModelError
from pipeline.summary import ModelUsage

# Told what the model is doing now ("drafting", "pass 2: detecting 7 sentences"), for progress.
Progress = Callable[[str], None]


def no_progress(step: str) -> None:
    """Progress nobody watches (the CLI, the benchmarks)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer and, where the backend knows them, the tokens it took."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatBackend(Protocol):
    name: str
    version: str

    def complete(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> str | Completion:
        """The model's answer to a chat; JSON matching ``schema`` where the backend can enforce
        it. A backend that cannot count tokens answers the text alone."""


class ModelOutputError(ModelError):
    """The model's answer could not be used (not JSON of the asked shape after the retries)."""


class Metered:
    """A backend as one draft sees it: the same model, with the calls and tokens of this draft
    counted (the backend itself is shared by every job of the process, so it cannot count)."""

    def __init__(self, backend: ChatBackend) -> None:
        self.backend = backend
        self.name, self.version = backend.name, backend.version
        self._usage = ModelUsage()
        self._lock = threading.Lock()

    @property
    def usage(self) -> ModelUsage:
        with self._lock:
            return self._usage.model_copy()

    def complete(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> Completion:
        answer = self.backend.complete(messages, schema)
        completion = answer if isinstance(answer, Completion) else Completion(answer)
        with self._lock:
            self._usage = ModelUsage(
                calls=self._usage.calls + 1,
                prompt_tokens=self._usage.prompt_tokens + (completion.prompt_tokens or 0),
                completion_tokens=self._usage.completion_tokens
                + (completion.completion_tokens or 0),
            )
        return completion


def answer_text(answer: str | Completion) -> str:
    return answer.text if isinstance(answer, Completion) else answer


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
        answer = answer_text(backend.complete(conversation, schema))
        try:
            # strict=False admits raw control characters inside strings, which grammar engines
            # (xgrammar, here and in vLLM) let through; the shape is still checked strictly.
            parsed = json.loads(answer, strict=False)
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
