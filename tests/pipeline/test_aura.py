"""AURA on a tiny random Llama: the hook's multi-layer rows, and the per-sentence ratio."""

from __future__ import annotations

import pytest
import torch

from launch.tiny_models import tiny_llama, word_tokenizer
from pipeline.backends.attention import attention_rows_by_layer
from pipeline.backends.aura import aura_scores

SOURCE = "the patient was admitted with chest pain and treated with aspirin ."
CONTEXT = f"summarize this note for a hospital discharge summary : {SOURCE} summary :"
SUMMARY = " the patient was admitted with chest pain . treated with aspirin ."


def test_rows_of_several_layers_equal_eager_attention_with_gqa_and_rotary() -> None:
    model = tiny_llama(vocab_size=120)
    ids = torch.randint(0, 120, (1, 40), generator=torch.Generator().manual_seed(4))
    rows = [10, 25, 39]
    hooked = attention_rows_by_layer(model, ids, rows, [0, 1])
    with torch.no_grad():
        eager = model(input_ids=ids, output_attentions=True).attentions
    for layer in (0, 1):
        torch.testing.assert_close(hooked[layer], eager[layer][0][:, rows], atol=1e-5, rtol=0)


def reference_aura(model, tokenizer, sentence_spans):
    text = CONTEXT + SUMMARY
    encoded = tokenizer(text, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    start_source = CONTEXT.index(SOURCE)
    source = [
        i
        for i, (s, e) in enumerate(offsets)
        if e > s and s < start_source + len(SOURCE) and start_source < e
    ]
    generated = [i for i, (s, e) in enumerate(offsets) if e > s and s >= len(CONTEXT)]
    with torch.no_grad():
        attentions = model(
            input_ids=torch.tensor([encoded["input_ids"]]), output_attentions=True
        ).attentions
    matrix = attentions[-1][0].mean(dim=0)
    ratios = {}
    for position in generated:
        earlier = [i for i in generated if i < position]
        if earlier:
            src = matrix[position, source].mean().item()
            gen = matrix[position, earlier].mean().item()
            ratios[position] = src / (src + gen)
    scores = []
    for start, end in sentence_spans:
        inside = [
            r
            for p, r in ratios.items()
            if offsets[p][0] - len(CONTEXT) < end and start < offsets[p][1] - len(CONTEXT)
        ]
        scores.append(sum(inside) / len(inside) if inside else None)
    return scores


def test_aura_matches_an_eager_rederivation_and_lies_in_zero_one() -> None:
    tokenizer = word_tokenizer(CONTEXT + SUMMARY)
    model = tiny_llama(len(tokenizer))
    first = SUMMARY.index(" .") + 2
    spans = [(1, first), (first + 1, len(SUMMARY))]
    start_source = CONTEXT.index(SOURCE)
    scores = aura_scores(
        model,
        tokenizer,
        context=CONTEXT,
        source_spans=[(start_source, start_source + len(SOURCE))],
        summary=SUMMARY,
        sentence_spans=spans,
    )
    expected = reference_aura(model, tokenizer, spans)
    assert scores == pytest.approx(expected, abs=1e-5)
    assert all(score is not None and 0 <= score <= 1 for score in scores)


def test_no_source_means_no_score() -> None:
    tokenizer = word_tokenizer(CONTEXT + SUMMARY)
    model = tiny_llama(len(tokenizer))
    assert aura_scores(
        model, tokenizer, context=CONTEXT, source_spans=[], summary=SUMMARY, sentence_spans=[(0, 5)]
    ) == [None]
