"""Any OpenAI-compatible chat-completions endpoint (vLLM, TGI, llama.cpp server, Ollama).

It answers :class:`pipeline.agentic.ChatBackend`'s ``complete``: temperature 0, JSON mode where
the server takes ``response_format`` (dropped once when it refuses it), timeouts, and retries with
backoff honouring ``Retry-After`` on 429 and 5xx. Grounding (AURA) for such a model comes from a
local scorer model (``pipeline.llm.TransformersBackend.grounding``).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from pipeline.errors import ModelError
from smartapp.core.metrics import MODEL_CALLS, MODEL_TOKENS

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


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
        json_mode: bool = True,
        client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{model}"
        self.version = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.json_mode = json_mode
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
                wait = response.headers.get("retry-after")
                time.sleep(float(wait) if wait and wait.isdigit() else self.backoff_s * 2**attempt)
                continue
            return response
        raise BackendError(f"{self.name}: no answer after {self.max_retries + 1} tries")

    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        response = self._post(body)
        if response.status_code == 400 and self.json_mode and "response_format" in response.text:
            self.json_mode = False  # the server does not take response_format: parse strictly
            return self.complete(messages, schema)
        if response.status_code != 200:
            MODEL_CALLS.labels(self.name, f"http_{response.status_code}").inc()
            raise BackendError(f"{self.name}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            answer = response.json()
            content = str(answer["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as error:
            MODEL_CALLS.labels(self.name, "malformed").inc()
            raise BackendError(f"{self.name}: malformed answer: {response.text[:200]}") from error
        MODEL_CALLS.labels(self.name, "ok").inc()
        usage = answer.get("usage") if isinstance(answer, dict) else None
        for kind in ("prompt", "completion"):
            count = usage.get(f"{kind}_tokens") if isinstance(usage, dict) else None
            if isinstance(count, int) and count >= 0:
                MODEL_TOKENS.labels(self.name, kind).inc(count)
        return content
