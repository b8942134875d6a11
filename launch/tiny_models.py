"""Tiny randomly initialised transformers and a tokenizer built here, for the tests and the
benchmarks of the code paths that need a model: no download, ever."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    BertConfig,
    BertModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from pipeline.settings import SchemaLimits

# A random model writes until a bound stops it: small answer bounds keep tiny models' answers
# short (a test setting; the production bounds are SchemaLimits' defaults).
TINY_ANSWER_LIMITS = SchemaLimits(
    course_sentences=3,
    sentence_chars=40,
    citations_per_sentence=2,
    sentences_per_fix=2,
    entailment_spans=2,
    span_chars=12,
    extraction_items=3,
    item_chars=16,
    quote_chars=24,
)
# A chat template of the plainest kind, so that chat servers (vLLM) can serve the tiny model.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)

WORDS = (
    "the patient was admitted with chest pain and treated with aspirin metoprolol heparin "
    "she denies fever cough vomiting diarrhea follow up in two weeks with cardiology lisinopril "
    "mg daily discharged home stable summarize clinically important facts of this note for a "
    "hospital discharge summary diagnoses treatments procedures results medication changes "
    "instruction blood pressure glucose creatinine normal troponin elevated echo showed "
    "ejection fraction percent"
).split()


def word_tokenizer(extra_text: str = "") -> PreTrainedTokenizerFast:
    """A word-level tokenizer over a fixed vocabulary (plus the words of ``extra_text``)."""
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<s>", "</s>"]
    for word in [*WORDS, *re.findall(r"\w+|[^\w\s]", extra_text.lower())]:
        if word not in vocabulary:
            vocabulary.append(word)
    model = models.WordLevel({w: i for i, w in enumerate(vocabulary)}, unk_token="[UNK]")
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        bos_token="<s>",
        eos_token="</s>",
    )


def json_tokenizer(extra_text: str = "", vocab_size: int = 600) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained here on the fixed words, JSON punctuation and
    ``extra_text``: every string can be written with it (all 256 bytes are tokens), as a
    grammar-constrained decoder needs, and its tokens join back to the exact text."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [" ".join(WORDS), '{"sentences": [{"text": "", "citations": []}]}', extra_text]
    tokenizer.train_from_iterator(corpus * 2, trainer)
    built = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    built.chat_template = CHAT_TEMPLATE
    return built


class ScriptedModel(torch.nn.Module):
    """A causal "model" whose logits spell a chosen answer, token by token, whatever the prompt:
    a deterministic stand-in to show what a constrained decoder lets through. After the script
    it favours the end-of-sequence token."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast, answer: str) -> None:
        super().__init__()
        self.script = list(tokenizer(answer, add_special_tokens=False)["input_ids"])
        self.end = tokenizer.eos_token_id
        self.config = SimpleNamespace(
            vocab_size=len(tokenizer), model_type="scripted", _name_or_path="scripted"
        )
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the module a device

    def forward(
        self, input_ids: torch.Tensor, cache: int | None = None, **_: Any
    ) -> SimpleNamespace:
        # The cache is the position in the script: None on the prompt, then one step per token.
        position = 0 if cache is None else cache + 1
        wanted = self.script[position] if position < len(self.script) else self.end
        logits = torch.zeros(1, input_ids.shape[1], self.config.vocab_size)
        logits[0, -1, wanted] = 10.0
        return SimpleNamespace(logits=logits, cache=position)


def tiny_llama(
    vocab_size: int,
    seed: int = 0,
    max_positions: int = 512,
    hidden_size: int = 64,
    heads: int = 4,
) -> LlamaForCausalLM:
    """Two layers, grouped key/value heads (query heads over half as many), rotary positions."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=heads // 2,
        max_position_embeddings=max_positions,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config).eval()


def tiny_bert(vocab_size: int, seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        attn_implementation="eager",
    )
    return BertModel(config).eval()
