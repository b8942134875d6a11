"""The language-model interface the agents use, strict JSON answers with a bounded retry, and
the per-draft count of what the model was asked (calls and tokens).

Every call has a token budget sized to its task
(``pipeline.backends.answer_schemas.answer_budget``: what the schema, bounded by its input, can
hold), never one global cap. An answer cut short (by its budget, or by the decoder's loop guard) is
salvaged: the array items completed so far are kept and checked like any others, rather than the
whole answer thrown away and asked again. Only an answer with nothing to salvage is asked again,
saying what went wrong, with half the budget.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

from pipeline.backends.answer_schemas import answer_budget
from pipeline.errors import ModelError
from pipeline.evidence.summary import ModelUsage

Item = TypeVar("Item")
Answer = TypeVar("Answer")
# Told what the model is doing now ("drafting", "pass 2: detecting 7 sentences"), for progress.
Progress = Callable[[str], None]


def no_progress(step: str) -> None:
    """Progress nobody watches (the CLI, the benchmarks)."""


# A chat as every backend takes it (a role and a content per message), and the JSON schema an
# answer must match: the protocol's types, named once.
ChatMessages: TypeAlias = list[dict[str, str]]
Schema: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer and, where the backend knows them, the tokens it took."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Ended by its token budget or by the loop guard, not by the model.
    cut: bool = False


class ChatBackend(Protocol):
    name: str
    version: str

    def complete(
        self, messages: ChatMessages, schema: Schema | None = None, max_tokens: int | None = None
    ) -> str | Completion:
        """The model's answer to a chat, in at most ``max_tokens`` tokens; JSON matching
        ``schema`` where the backend can enforce it. A backend that cannot count tokens answers
        the text alone."""


class ModelOutputError(ModelError):
    """The model's answer could not be used (not JSON of the asked shape after the retries)."""


class Metered:
    """A backend as one draft sees it: the same model, with the calls and tokens of this draft
    counted (the backend itself is shared by every job of the process, so it cannot count)."""

    def __init__(self, backend: ChatBackend) -> None:
        self.backend = backend
        self.name, self.version = backend.name, backend.version
        # The backend's window, where it says it, for fitting prompts.
        self.context_tokens: int | None = getattr(backend, "context_tokens", None)
        self._usage = ModelUsage()
        self._lock = threading.Lock()

    @property
    def usage(self) -> ModelUsage:
        with self._lock:
            return self._usage.model_copy()

    def complete(
        self, messages: ChatMessages, schema: Schema | None = None, max_tokens: int | None = None
    ) -> Completion:
        answer = self.backend.complete(messages, schema, max_tokens)
        completion = answer if isinstance(answer, Completion) else Completion(answer)
        with self._lock:
            self._usage = self._usage.model_copy(
                update={
                    "calls": self._usage.calls + 1,
                    "prompt_tokens": self._usage.prompt_tokens + (completion.prompt_tokens or 0),
                    "completion_tokens": self._usage.completion_tokens
                    + (completion.completion_tokens or 0),
                }
            )
        return completion

    def count_tokens(self, text: str) -> int | None:
        """The tokens ``text`` takes for the backend, where it can count them."""
        counter = getattr(self.backend, "count_tokens", None)
        return None if counter is None else int(counter(text))

    def wasted(self, completion: Completion) -> None:
        """Count an answer that could not be used whole."""
        with self._lock:
            spent = self._usage.wasted_tokens + (completion.completion_tokens or 0)
            self._usage = self._usage.model_copy(update={"wasted_tokens": spent})


def token_counter(backend: ChatBackend) -> tuple[int, Callable[[str], int]] | None:
    """The backend's context window and its token counter, where it says both (a local model
    does; a server, unless configured, does not)."""
    window = getattr(backend, "context_tokens", None)
    count = getattr(backend, "count_tokens", None)
    if not isinstance(window, int) or count is None or count("") is None:
        return None
    return window, lambda text: int(count(text))


def in_parallel(
    work: Callable[[Item], Answer], items: Sequence[Item], concurrency: int
) -> list[Answer]:
    """``work`` on each item, at most ``concurrency`` at once, answers in the items' order; the
    first failure is raised (a draft is all or nothing)."""
    if concurrency <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(items))) as pool:
        return list(pool.map(work, items))


def answer_text(answer: str | Completion) -> str:
    return answer.text if isinstance(answer, Completion) else answer


def close_json(prefix: str) -> str | None:
    """A JSON text cut short, closed after its last complete value: the unfinished tail (half a
    string, a key without its value) dropped and the open arrays and objects closed. None when
    no value was completed."""
    stack: list[str] = []
    expect_key: list[bool] = []
    in_string = escaped = False
    string_is_key = False
    safe: tuple[int, list[str]] | None = None
    for index, char in enumerate(prefix):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if not string_is_key and stack:
                    safe = (index + 1, list(stack))
            continue
        if char == '"':
            in_string = True
            string_is_key = bool(stack) and stack[-1] == "{" and expect_key[-1]
        elif char in "{[":
            stack.append(char)
            expect_key.append(char == "{")
        elif char in "}]" and stack:
            stack.pop()
            expect_key.pop()
            if stack:
                safe = (index + 1, list(stack))
        elif char == ":" and stack and stack[-1] == "{":
            expect_key[-1] = False
        elif char == "," and stack and stack[-1] == "{":
            expect_key[-1] = True
        elif (char.isdigit() or char in "el") and stack and index + 1 < len(prefix):
            # The last character of a number or literal that is a value (not inside a key).
            is_value = stack[-1] == "[" or not expect_key[-1]
            if is_value and prefix[index + 1] in ",}] \n":
                safe = (index + 1, list(stack))
    if safe is None:
        return None
    end, open_at = safe
    return prefix[:end] + "".join("}" if bracket == "{" else "]" for bracket in reversed(open_at))


def salvage_items(answer: str, key: str, fields: Sequence[str] = ()) -> list[Any] | None:
    """From an answer cut short, the items of the array under ``key`` that are whole (every one
    of ``fields`` present; a list field keeps its items once each): duplicates dropped, since a
    decoder in a loop writes the same item again. None when there is no such array."""
    closed = close_json(answer)
    try:
        parsed = json.loads(closed, strict=False) if closed is not None else None
    except ValueError:
        parsed = None
    found = parsed.get(key) if isinstance(parsed, dict) else None
    if not isinstance(found, list):
        return None
    items: list[Any] = []
    for item in found:
        if isinstance(item, dict):
            if any(field not in item for field in fields):
                continue
            item = {
                name: list(dict.fromkeys(value)) if isinstance(value, list) else value
                for name, value in item.items()
            }
        if item not in items:
            items.append(item)
    return items


def _item_fields(schema: Schema | None, key: str) -> list[str]:
    """The fields an item of the array ``key`` must have, as the schema requires them."""
    array = (schema or {}).get("properties", {}).get(key, {})
    return list(array.get("items", {}).get("required", []))


def ask_json(
    backend: ChatBackend,
    messages: ChatMessages,
    required: Sequence[str],
    retries: int,
    schema: Schema | None = None,
    *,
    salvage: str | None = None,
) -> dict[str, Any]:
    """The model's JSON answer, parsed strictly, within the budget ``schema`` allows. An answer
    cut short is salvaged when ``salvage`` names its array of items; otherwise say what was wrong
    and ask again (bounded), each time with half the budget. A second answer cut short ends the
    call: a greedy decoder cut once (by its budget or its loop guard) is cut the same way again,
    so asking a third time only wastes another answer."""
    conversation = list(messages)
    problem = ""
    cut_before = False
    budget = answer_budget(schema) if schema is not None else None
    answers = 0
    while answers <= retries:
        answers += 1
        answer = backend.complete(conversation, schema, budget)
        completion = answer if isinstance(answer, Completion) else Completion(answer)
        try:
            # strict=False admits raw control characters inside strings, which grammar engines
            # (xgrammar, here and in vLLM) let through; the shape is still checked strictly.
            parsed = json.loads(completion.text, strict=False)
            if not isinstance(parsed, dict) or any(key not in parsed for key in required):
                raise ValueError(f"the object needs the keys {', '.join(required)}")
            return parsed
        except ValueError as error:
            if isinstance(backend, Metered):
                backend.wasted(completion)
            whole = _item_fields(schema, salvage) if salvage is not None else []
            kept = salvage_items(completion.text, salvage, whole) if salvage is not None else None
            if kept and salvage is not None and list(required) == [salvage]:
                return {salvage: kept}
            problem = "the answer was cut short" if completion.cut else str(error)
            if completion.cut and cut_before:
                break
            cut_before = cut_before or completion.cut
            budget = max(budget // 2, 64) if budget is not None else None
            conversation += [
                {"role": "assistant", "content": completion.text},
                {
                    "role": "user",
                    "content": f"That was not valid: {problem}. Answer with the JSON object only.",
                },
            ]
    raise ModelOutputError(f"{backend.name}: no usable JSON after {answers} answers ({problem})")
