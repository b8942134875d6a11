"""Chat-model doubles for unit tests: each answers ``complete`` (the ``ChatBackend`` protocol of
``pipeline.backends.chat``) from a function of the conversation, and keeps every conversation
and token budget it was sent, so a test reads what the pipeline asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.backends.chat import ChatMessages, Completion, Schema

Answer = str | Completion
Messages = ChatMessages


class ScriptedChat:
    """Answers with ``answer(messages)``; a subclass may override :meth:`answer` instead."""

    name = "scripted-model"
    version = "test"

    def __init__(self, answer: Callable[[Messages], Answer] | None = None) -> None:
        self._answer = answer
        self.prompts: list[Messages] = []
        self.budgets: list[int | None] = []

    def answer(self, messages: Messages) -> Answer:
        if self._answer is None:
            raise AssertionError("this double was given no answer")
        return self._answer(messages)

    def complete(
        self, messages: Messages, schema: Schema | None = None, max_tokens: int | None = None
    ) -> Any:
        self.prompts.append(messages)
        self.budgets.append(max_tokens)
        return self.answer(messages)


def in_turn(*answers: Answer) -> Callable[[Messages], Answer]:
    """The answers one after another, whatever is asked."""
    queue = list(answers)
    return lambda messages: queue.pop(0)


def task_of(messages: Messages) -> str:
    """The agent's task a prompt names ("TASK: draft"), from the first user message."""
    first_line = messages[1]["content"].split("\n", 1)[0]
    return first_line.removeprefix("TASK: ").strip()
