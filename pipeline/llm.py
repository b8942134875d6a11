"""The local language-model backend: a Hugging Face causal LM run in this process.

It answers :class:`pipeline.agentic.ChatBackend`'s ``complete`` and scores grounding (AURA) from
its own attentions. Decoding is greedy with no repetition penalty, since summaries copy numbers and
names. JSON answers are parsed strictly by the caller, with a bounded retry
(``pipeline.agentic.ask_json``). The OpenAI-compatible backend does HTTP, so it lives in
``smartapp.core.openai_backend`` (ARCHITECTURE.md: all I/O sits in smartapp and launch).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pipeline.aura import aura_scores


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
            return str(
                self.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True
                )
            )
        turns = [f"{message['role']}: {message['content']}" for message in messages]
        return "\n".join(turns) + "\nassistant:"

    @torch.no_grad()
    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None) -> str:
        """Greedy text, or, given a JSON schema, JSON that matches it (``SchemaDecoder``)."""
        text = self.chat_text(messages)
        if schema is not None:
            return SchemaDecoder(self.model, self.tokenizer).generate(text, schema)
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
        return str(self.tokenizer.decode(output[0, input_ids.shape[1] :], skip_special_tokens=True))

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


class SchemaDecoder:
    """JSON that matches a schema, from any causal LM: the structure is written by the decoder,
    the model chooses every enum value (by likelihood) and writes every free string (greedily,
    from tokens that cannot end or escape the string). A small grammar-constrained decoder for the
    subset of JSON Schema the agents use: objects, arrays, strings, enums, string-or-null."""

    def __init__(self, model: Any, tokenizer: Any, *, string_tokens: int = 24) -> None:
        self.model, self.tokenizer, self.string_tokens = model, tokenizer, string_tokens
        vocabulary = tokenizer.get_vocab()
        self._free = [
            index
            for token, index in vocabulary.items()
            if (text := tokenizer.decode([index])).strip()
            and not any(ch in text for ch in '"\\\n\r\t')
            and index not in set(tokenizer.all_special_ids)
        ]

    def _ids(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    @torch.no_grad()
    def _logits(self, text: str) -> torch.Tensor:
        ids = torch.tensor(
            [self.tokenizer(text)["input_ids"]], device=next(self.model.parameters()).device
        )
        logits: torch.Tensor = self.model(input_ids=ids).logits[0]
        return logits

    def _choose(self, context: str, options: Sequence[Any]) -> Any:
        def score(option: Any) -> float:
            rendered = json.dumps(option)
            logits = self._logits(context + rendered)
            option_ids = self._ids(rendered)
            if not option_ids:
                return float("-inf")
            log_probs = torch.log_softmax(logits[-len(option_ids) - 1 : -1].float(), dim=-1)
            return float(
                sum(log_probs[i, token] for i, token in enumerate(option_ids)) / len(option_ids)
            )

        return max(options, key=score)

    def _string(self, context: str, limit: int | None) -> str:
        pieces: list[int] = []
        allowed = torch.tensor(self._free)
        for _ in range(min(limit or self.string_tokens, self.string_tokens)):
            logits = self._logits(context + '"' + self.tokenizer.decode(pieces))[-1]
            pieces.append(int(allowed[logits[allowed].argmax()]))
        return str(self.tokenizer.decode(pieces)).strip()

    def value(self, context: str, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return self._choose(context, schema["enum"])
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next(k for k in kind if k != "null")
        if kind == "object":
            built: dict[str, Any] = {}
            for name, child in schema.get("properties", {}).items():
                prefix = json.dumps(built)[:-1] + (", " if built else "") + f'"{name}": '
                built[name] = self.value(context + prefix, child)
            return built
        if kind == "array":
            count = max(schema.get("minItems", 1), 1)
            count = min(count, schema.get("maxItems", count))
            items: list[Any] = []
            for _ in range(count):
                items.append(self.value(context + json.dumps(items)[:-1], schema.get("items", {})))
            return items
        if kind == "string":
            return self._string(context, schema.get("maxLength"))
        raise ValueError(f"unsupported schema {schema}")

    def generate(self, prompt: str, schema: dict[str, Any]) -> str:
        return json.dumps(self.value(prompt, schema))
