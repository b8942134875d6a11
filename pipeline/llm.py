"""Language-model backends for the agentic summarizer: a local transformers model, or any
OpenAI-compatible endpoint (vLLM, TGI, llama.cpp server, Ollama).

Both answer :class:`pipeline.agentic.ChatBackend`'s ``complete``; the transformers backend also
scores grounding (AURA) from its own attentions. Decoding is greedy with no repetition penalty,
since summaries copy numbers and names. JSON answers are parsed strictly by the caller, with a
bounded retry (``pipeline.agentic.ask_json``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import torch

from pipeline.aura import aura_scores

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class BackendError(RuntimeError):
    """The model could not be reached or answered nothing usable."""


class TransformersBackend:
    """A local Hugging Face causal LM (a directory, loaded offline, or objects built in code)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "transformers",
        max_new_tokens: int = 512,
        grounding_layers: Sequence[int] | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.version = str(getattr(model.config, "_name_or_path", "") or model.config.model_type)
        self.max_new_tokens = max_new_tokens
        self.grounding_layers = grounding_layers

    @classmethod
    def from_directory(cls, path: Path, **options: Any) -> TransformersBackend:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
        return cls(model, tokenizer, name=f"transformers:{path.name}", **options)

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        """The prompt as the model sees it: its chat template, else a plain role-prefixed form."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        turns = [f"{message['role']}: {message['content']}" for message in messages]
        return "\n".join(turns) + "\nassistant:"

    @torch.no_grad()
    def complete(self, messages: list[dict[str, str]]) -> str:
        text = self.chat_text(messages)
        encoded = self.tokenizer(text, return_tensors="pt")
        device = next(self.model.parameters()).device
        input_ids = encoded["input_ids"].to(device)
        pad = self.tokenizer.pad_token_id
        output = self.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=self.max_new_tokens,
            do_sample=False,
            repetition_penalty=1.0,
            pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id,
        )
        return self.tokenizer.decode(output[0, input_ids.shape[1] :], skip_special_tokens=True)

    def grounding(
        self,
        context: str,
        source_spans: list[tuple[int, int]],
        summary: str,
        sentence_spans: list[tuple[int, int]],
    ) -> list[float | None]:
        """AURA of each summary sentence, teacher-forced after ``context`` in chat form."""
        chat = self.chat_text([{"role": "user", "content": context}])
        shift = chat.find(context)
        spans = [(start + max(shift, 0), end + max(shift, 0)) for start, end in source_spans]
        return aura_scores(
            self.model,
            self.tokenizer,
            context=chat,
            source_spans=spans,
            summary=summary,
            sentence_spans=sentence_spans,
            layers=self.grounding_layers,
        )


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

    def complete(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        response = self._post(body)
        if response.status_code == 400 and self.json_mode and "response_format" in response.text:
            self.json_mode = False  # the server does not take response_format: parse strictly
            return self.complete(messages)
        if response.status_code != 200:
            raise BackendError(f"{self.name}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            return str(response.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise BackendError(f"{self.name}: malformed answer: {response.text[:200]}") from error
