"""The local language-model backend: a Hugging Face causal LM run in this process.

It answers :class:`pipeline.agentic.ChatBackend`'s ``complete`` and scores grounding (AURA) from
its own attentions. Decoding is greedy with no repetition penalty, since summaries copy numbers and
names. JSON answers are parsed strictly by the caller, with a bounded retry
(``pipeline.agentic.ask_json``). The OpenAI-compatible backend does HTTP, so it lives in
``smartapp.openai_backend`` (ARCHITECTURE.md: all I/O sits in smartapp and launch).
"""

from __future__ import annotations

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
