"""The local language-model backend: a Hugging Face causal LM run in this process.

It answers :class:`pipeline.backends.chat.ChatBackend`'s ``complete`` and scores grounding (AURA)
from its own attentions. Decoding is greedy with no repetition penalty, since summaries copy numbers
and names; a loop is stopped instead: when the last ``LOOP_NGRAM`` tokens have been written
twice before, the model is repeating itself (the same item again and again), decoding ends and
the answer is marked cut, for the caller to keep what was complete
(``pipeline.backends.chat.ask_json``). Each call decodes within its own token budget
(``max_tokens``, sized by the caller to the task). Given a JSON schema, decoding is constrained by
xgrammar (the grammar engine vLLM and SGLang use): at every step the tokens that cannot continue a
matching answer are masked, so strings end when the model ends them and arrays hold as many items
as the model writes, within the schema's bounds. The OpenAI-compatible backend does HTTP, so it
lives in ``smartapp.core.openai_backend`` (ARCHITECTURE.md: all I/O sits in smartapp and launch).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import xgrammar

from pipeline.backends.aura import aura_scores
from pipeline.backends.chat import ChatMessages, Completion, Schema

# Compiled grammars kept per backend (the schemas differ only by their citable ids per draft).
GRAMMAR_CACHE_SIZE = 64
# A run this long written a third time is a loop: longer than a JSON item's keys and
# punctuation, so only repeated content (an item copied again) trips it.
LOOP_NGRAM = 24
LOOP_REPEATS = 3


class LoopGuard:
    """Counts each run of ``n`` tokens as it is written, one step at a time (constant work per
    token, however long the answer): a run written ``times`` times is a loop."""

    def __init__(self, n: int = LOOP_NGRAM, times: int = LOOP_REPEATS) -> None:
        self.n, self.times = n, times
        self.seen: Counter[tuple[int, ...]] = Counter()

    def looping(self, tokens: list[int]) -> bool:
        """Whether the run ending with the token just written completes a loop."""
        if len(tokens) < self.n:
            return False
        run = tuple(tokens[-self.n :])
        self.seen[run] += 1
        return self.seen[run] >= self.times


def weights_digest(directory: Path) -> str:
    """The version of a model directory: the SHA-256 of its configuration and weight files, so
    two drafts name the same version exactly when the same weights drafted them."""
    digest = hashlib.sha256()
    kept = sorted(
        path
        for path in directory.iterdir()
        if path.is_file() and path.suffix in {".json", ".safetensors", ".bin"}
    )
    for path in kept:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()[:16]}"


class TransformersBackend:
    """A local Hugging Face causal LM (a directory, loaded offline, or objects built in code)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "transformers",
        version: str | None = None,
        max_new_tokens: int = 2048,
        grounding_layers: Sequence[int] | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        # What the draft's Device names: never the path it was loaded from (a server's paths
        # are nobody's business, and they say nothing of which weights drafted).
        loaded_from = str(getattr(model.config, "_name_or_path", "") or "")
        self.version = version or Path(loaded_from).name or str(model.config.model_type)
        self.max_new_tokens = max_new_tokens
        self.grounding_layers = grounding_layers
        self._cache_argument = (
            "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        )
        # The prompt and its answer must fit here
        # (``pipeline.summarizing.draft_agent.fitted_facts``).
        self.context_tokens: int | None = getattr(model.config, "max_position_embeddings", None)
        self._compiler: xgrammar.GrammarCompiler | None = None
        self._vocab_size = getattr(model.config, "vocab_size", None) or len(tokenizer)
        self._grammars: dict[str, xgrammar.CompiledGrammar] = {}
        # One model, one forward pass at a time: concurrent callers (the loop's per-sentence
        # calls) take turns rather than share the model's buffers.
        self._lock = threading.Lock()

    @classmethod
    def from_directory(
        cls, path: Path, *, name: str | None = None, **options: Any
    ) -> TransformersBackend:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
        return cls(
            model,
            tokenizer,
            name=name or f"transformers:{path.name}",
            version=weights_digest(path),
            **options,
        )

    def chat_text(self, messages: ChatMessages) -> str:
        """The prompt as the model sees it: its chat template, else a plain role-prefixed form."""
        if getattr(self.tokenizer, "chat_template", None):
            return str(
                self.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True
                )
            )
        turns = [f"{message['role']}: {message['content']}" for message in messages]
        return "\n".join(turns) + "\nassistant:"

    def count_tokens(self, text: str) -> int:
        """The tokens ``text`` takes as a user turn, chat template included."""
        return len(self.tokenizer(self.chat_text([{"role": "user", "content": text}]))["input_ids"])

    def complete(
        self, messages: ChatMessages, schema: Schema | None = None, max_tokens: int | None = None
    ) -> Completion:
        """Greedy text, or, given a JSON schema, JSON that matches it, in at most ``max_tokens``
        (and never more than the backend's ``max_new_tokens``, nor past its context window)."""
        prompt = self.tokenizer(self.chat_text(messages), return_tensors="pt")["input_ids"]
        budget = min(self.max_new_tokens, max_tokens or self.max_new_tokens)
        if self.context_tokens is not None:
            budget = max(1, min(budget, self.context_tokens - prompt.shape[1]))
        with self._lock:
            matcher = None if schema is None else xgrammar.GrammarMatcher(self._grammar(schema))
            tokens, ended = self._generate(prompt, matcher, budget)
        text = str(self.tokenizer.decode(tokens, skip_special_tokens=True))
        return Completion(
            text, prompt_tokens=prompt.shape[1], completion_tokens=len(tokens), cut=not ended
        )

    def _grammar(self, schema: dict[str, Any]) -> xgrammar.CompiledGrammar:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if self._compiler is None:
                info = xgrammar.TokenizerInfo.from_huggingface(
                    self.tokenizer, vocab_size=self._vocab_size
                )
                self._compiler = xgrammar.GrammarCompiler(info)
            if len(self._grammars) >= GRAMMAR_CACHE_SIZE:
                self._grammars.pop(next(iter(self._grammars)))
            # Compiled in the schema's own property order, the order the answer is written in.
            self._grammars[key] = self._compiler.compile_json_schema(
                json.dumps(schema), any_whitespace=False
            )
        return self._grammars[key]

    @torch.no_grad()
    def _generate(
        self, prompt: torch.Tensor, matcher: xgrammar.GrammarMatcher | None, budget: int
    ) -> tuple[list[int], bool]:
        """Greedy tokens after ``prompt``, and whether the model ended them: until the grammar
        is complete (with a matcher) or the end-of-sequence token, at most ``budget`` tokens, and
        not past a loop (``LoopGuard``)."""
        device = next(self.model.parameters()).device
        step_input, cache = prompt.to(device), None
        bitmask = None if matcher is None else xgrammar.allocate_token_bitmask(1, self._vocab_size)
        end = self.tokenizer.eos_token_id
        generated: list[int] = []
        guard = LoopGuard()
        for _ in range(budget):
            output = self.model(
                input_ids=step_input, use_cache=True, **{self._cache_argument: cache}
            )
            cache = getattr(output, self._cache_argument, None)
            logits = output.logits[:, -1, :].float()
            if matcher is not None and bitmask is not None:
                matcher.fill_next_token_bitmask(bitmask)
                xgrammar.apply_token_bitmask_inplace(logits, bitmask.to(logits.device))
            token = int(logits[0].argmax())
            if matcher is not None:
                if not matcher.accept_token(token):
                    return generated, False
                if matcher.is_terminated():
                    return generated, True
            elif token == end:
                return generated, True
            generated.append(token)
            if guard.looping(generated):
                return generated, False
            if cache is None:  # a model that keeps no cache is given the whole sequence
                step_input = torch.cat([step_input, torch.tensor([[token]], device=device)], 1)
            else:
                step_input = torch.tensor([[token]], device=device)
        return generated, False

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
