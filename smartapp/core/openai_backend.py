"""Any OpenAI-compatible chat-completions endpoint (vLLM, TGI, llama.cpp server, Ollama, OpenAI).

It answers :class:`pipeline.backends.chat.ChatBackend`'s ``complete`` at temperature 0, with
timeouts and retries with backoff honouring ``Retry-After`` on 429 and 5xx. Given a JSON schema it
asks for the strongest structured output the server takes: ``json_schema`` (strict: the server's
decoder enforces the schema), else ``json_object``, else plain text parsed strictly by the caller.
Which one a server takes is found on the first schema call (a server refuses an unknown
``response_format`` with 400) and kept, so later calls never pay for the detection again.
Grounding (AURA) for such a model comes from a local scorer model
(``pipeline.backends.llm.TransformersBackend.grounding``).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Literal

import httpx

from pipeline.backends.chat import ChatMessages, Completion, Schema
from pipeline.errors import ModelError
from smartapp.core.metrics import MODEL_CALLS, MODEL_TOKENS
from smartapp.core.retry_after import RETRIED_STATUSES, retry_wait

ResponseFormat = Literal["json_schema", "json_object", "text"]
# Strongest first: a server that refuses one is asked with the next.
RESPONSE_FORMATS: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "text")
_FORMAT_REFUSAL = re.compile(r"response_format|json_schema|json_object|structured", re.I)


class BackendError(ModelError):
    """The model could not be reached or answered nothing usable."""


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions endpoint, through httpx."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        response_format: ResponseFormat | None = None,
        max_tokens: int | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{model}"
        self.version = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_tokens = max_tokens
        # None until the first schema call finds what the server takes (or set by the operator).
        self.response_format: ResponseFormat | None = response_format
        self._detecting = threading.Lock()
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.Client(timeout=timeout_s, headers=headers)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.post(f"{self.base_url}/chat/completions", json=body)
            except httpx.TransportError as error:
                if attempt == self.max_retries:
                    raise BackendError(f"{self.name}: no answer ({error})") from error
                time.sleep(self.backoff_s * 2**attempt)
                continue
            if response.status_code in RETRIED_STATUSES and attempt < self.max_retries:
                time.sleep(retry_wait(response, self.backoff_s * 2**attempt))
                continue
            return response
        raise BackendError(f"{self.name}: no answer after {self.max_retries + 1} tries")

    def _body(
        self,
        messages: ChatMessages,
        schema: Schema | None,
        response_format: ResponseFormat,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        budgets = [limit for limit in (self.max_tokens, max_tokens) if limit is not None]
        if budgets:
            body["max_tokens"] = min(budgets)
        if schema is not None and response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "strict": True, "schema": schema},
            }
        elif schema is not None and response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def complete(
        self, messages: ChatMessages, schema: Schema | None = None, max_tokens: int | None = None
    ) -> Completion:
        if schema is None:
            return self._answer(self._post(self._body(messages, None, "text", max_tokens)))
        if self.response_format is None:
            with self._detecting:  # the first schema call finds the format; the others wait
                if self.response_format is None:
                    return self._detect(messages, schema, max_tokens)
        body = self._body(messages, schema, self.response_format, max_tokens)
        return self._answer(self._post(body))

    def _detect(self, messages: ChatMessages, schema: Schema, max_tokens: int | None) -> Completion:
        for response_format in RESPONSE_FORMATS:
            response = self._post(self._body(messages, schema, response_format, max_tokens))
            refused = response.status_code in {400, 422} and _FORMAT_REFUSAL.search(response.text)
            if refused and response_format != "text":
                continue
            self.response_format = response_format
            return self._answer(response)
        raise AssertionError("the text format is never refused")

    def _answer(self, response: httpx.Response) -> Completion:
        if response.status_code != 200:
            MODEL_CALLS.labels(self.name, f"http_{response.status_code}").inc()
            raise BackendError(f"{self.name}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            answer = response.json()
            choice = answer["choices"][0]
            content = str(choice["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as error:
            MODEL_CALLS.labels(self.name, "malformed").inc()
            raise BackendError(f"{self.name}: malformed answer: {response.text[:200]}") from error
        MODEL_CALLS.labels(self.name, "ok").inc()
        usage = answer.get("usage") if isinstance(answer, dict) else None
        counts: dict[str, int | None] = {}
        for kind in ("prompt", "completion"):
            count = usage.get(f"{kind}_tokens") if isinstance(usage, dict) else None
            counts[kind] = count if isinstance(count, int) and count >= 0 else None
            if isinstance(count, int) and count >= 0:
                MODEL_TOKENS.labels(self.name, kind).inc(count)
        # "length": the server stopped at max_tokens, so the answer may be cut mid-item.
        cut = isinstance(choice, dict) and choice.get("finish_reason") == "length"
        return Completion(content, counts["prompt"], counts["completion"], cut=cut)
