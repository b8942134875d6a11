"""Tiny randomly initialised transformers and a tokenizer built here, for the tests and the
benchmarks of the code paths that need a model: no download, ever."""

from __future__ import annotations

import re

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import (
    BertConfig,
    BertModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
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


def tiny_llama(vocab_size: int, seed: int = 0) -> LlamaForCausalLM:
    """Two layers, grouped key/value heads (4 query heads over 2), rotary positions."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
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
