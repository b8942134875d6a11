"""FOCUS: attention rows read by the hook, the salience it yields, and the selection rules."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.tiny_models import tiny_bert, tiny_llama, word_tokenizer
from pipeline.backends.attention import attention_rows
from pipeline.summarizing.focus import (
    AttentionSalience,
    Candidate,
    candidates_of,
    default_salience,
    focus,
    select,
    word_budget,
    word_count,
)

NOTE = (
    "# History\nThe patient was admitted with chest pain. She denies fever.\n"
    "Troponin elevated. Echo showed ejection fraction 40 percent.\n"
    "# Medications\n- aspirin 81 mg daily\n- metoprolol 25 mg daily\n"
    "# Plan\nFollow up in two weeks with cardiology. Discharged home stable.\n"
)


def eager_rows(model: torch.nn.Module, ids: torch.Tensor, rows: list[int], layer: int):
    with torch.no_grad():
        attentions = model(input_ids=ids, output_attentions=True).attentions
    return attentions[layer][0][:, rows]


@pytest.mark.parametrize("layer", [0, 1])
def test_hook_rows_equal_eager_attention_on_a_tiny_llama(layer: int) -> None:
    model = tiny_llama(vocab_size=200)
    ids = torch.randint(0, 200, (1, 48), generator=torch.Generator().manual_seed(1))
    rows = [0, 7, 30, 47]
    hooked = attention_rows(model, ids, rows, layer)
    assert hooked.shape == (4, 4, 48)
    torch.testing.assert_close(hooked, eager_rows(model, ids, rows, layer), atol=1e-5, rtol=0)


@pytest.mark.parametrize("layer", [0, 1])
def test_hook_rows_equal_eager_attention_on_a_tiny_bert(layer: int) -> None:
    model = tiny_bert(vocab_size=200)
    ids = torch.randint(0, 200, (1, 40), generator=torch.Generator().manual_seed(2))
    rows = [0, 5, 39]
    torch.testing.assert_close(
        attention_rows(model, ids, rows, layer),
        eager_rows(model, ids, rows, layer),
        atol=1e-5,
        rtol=0,
    )


def test_hook_rows_equal_eager_attention_on_minilm() -> None:
    model = default_salience().model
    ids = torch.tensor([[101, 1996, 5776, 2001, 4914, 2007, 3108, 3255, 1012, 102]])
    original = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        expected = eager_rows(model, ids, [0, 4, 9], 5)
    finally:
        model.set_attn_implementation(original)
    torch.testing.assert_close(
        attention_rows(model, ids, [0, 4, 9], 5), expected, atol=1e-5, rtol=0
    )


def test_causal_rows_attend_only_to_the_past() -> None:
    model = tiny_llama(vocab_size=50)
    rows = attention_rows(model, torch.arange(20).unsqueeze(0), [5], 1)
    assert torch.all(rows[:, 0, 6:] == 0)
    torch.testing.assert_close(rows.sum(-1), torch.ones(4, 1))


def test_published_score_is_a_constant() -> None:
    """AgenticSum's score: the mean of a sentence's whole softmax rows is 1/length for any rows."""
    model = tiny_bert(vocab_size=100)
    ids = torch.randint(0, 100, (1, 32), generator=torch.Generator().manual_seed(3))
    rows = attention_rows(model, ids, range(32), 1)
    means = [rows[:, span].mean().item() for span in (slice(0, 5), slice(5, 20), slice(20, 32))]
    assert means == pytest.approx([1 / 32] * 3, abs=1e-7)


def test_salience_on_a_tiny_llama_scores_every_note_token_deterministically() -> None:
    tokenizer = word_tokenizer(NOTE)
    salience = AttentionSalience(tiny_llama(len(tokenizer)), tokenizer)
    offsets, scores = salience(NOTE)
    assert (
        len(offsets) == len(scores) == len(tokenizer(NOTE, add_special_tokens=False)["input_ids"])
    )
    assert sum(scores) / len(scores) == pytest.approx(1.0)
    assert salience(NOTE) == (offsets, scores)
    assert len(set(round(score, 6) for score in scores)) > 1


def test_long_notes_are_read_in_overlapping_windows_covering_every_token() -> None:
    long_note = " ".join([NOTE.replace("#", "")] * 12)
    tokenizer = word_tokenizer(long_note)
    salience = AttentionSalience(
        tiny_bert(len(tokenizer)), tokenizer, window_tokens=64, overlap_tokens=16
    )
    token_count = len(tokenizer(long_note, add_special_tokens=False)["input_ids"])
    windows = salience._windows(token_count)
    assert len(windows) > 1 and windows[0][0] == 0 and windows[-1][1] == token_count
    assert all(later[0] < earlier[1] for earlier, later in itertools.pairwise(windows))
    _offsets, scores = salience(long_note)
    assert len(scores) == token_count and all(score > 0 for score in scores)


def test_focus_on_minilm_keeps_half_the_words_in_order_with_medications_protected() -> None:
    candidates = candidates_of(NOTE)
    protected = [c.text for c in candidates if c.protected]
    assert protected == ["aspirin 81 mg daily", "metoprolol 25 mg daily"]
    kept = focus(NOTE, 0.5, default_salience(), candidates)
    assert [s.index for s in kept] == sorted(s.index for s in kept)
    budget = word_budget(0.5, sum(word_count(c.text) for c in candidates))
    kept_words = sum(word_count(s.text) for s in kept)
    assert kept_words >= budget and kept_words - max(word_count(s.text) for s in kept) < budget
    assert len(kept) < len(candidates)
    assert set(protected) <= {s.text for s in kept}
    assert all(NOTE[s.start : s.end] == s.text for s in kept)
    assert focus(NOTE, 0.5, default_salience(), candidates) == kept


def test_minilm_salience_follows_content_not_position() -> None:
    """In every order of four sentences the same one is most salient: position buys nothing."""
    sentences = [
        "Troponin elevated.",
        "The patient was admitted with chest pain.",
        "Discharged home stable.",
        "She likes the color blue.",
    ]
    winners = set()
    for order in itertools.permutations(sentences):
        text = " ".join(order)
        kept = focus(text, 1.0, default_salience(), candidates_of(text))
        winners.add(max(kept, key=lambda s: s.score).text)
    assert winners == {"Troponin elevated."}


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=40),
    ratio=st.floats(0.01, 1.0),
    data=st.data(),
)
def test_selection_properties(scores: list[float], ratio: float, data: st.DataObject) -> None:
    protected = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    lengths = data.draw(st.lists(st.integers(1, 30), min_size=len(scores), max_size=len(scores)))
    candidates = [
        Candidate(i * 100, i * 100 + 5, " ".join(["w"] * n), p)
        for i, (p, n) in enumerate(zip(protected, lengths, strict=True))
    ]
    kept = select(candidates, scores, ratio)
    budget = max(1, math.floor(ratio * sum(lengths)))
    assert budget == word_budget(ratio, sum(lengths))
    assert kept == sorted(set(kept))
    assert {i for i, p in enumerate(protected) if p} <= set(kept)
    unprotected = [i for i in kept if not protected[i]]
    kept_words = sum(lengths[i] for i in kept)
    if unprotected:  # the budget was not met without the last one chosen
        last = min(unprotected, key=lambda i: (scores[i], -i))
        assert kept_words - lengths[last] < budget
    dropped = [i for i in range(len(scores)) if i not in kept]
    if dropped:  # nothing was left out while the budget was unmet
        assert kept_words >= budget
    unprotected_kept = [i for i in kept if not protected[i]]
    for i in unprotected_kept:
        for j in dropped:
            assert (scores[i], -i) >= (scores[j], -j)
    assert select(candidates, scores, ratio) == kept


def test_ratio_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="ratio"):
        word_budget(0, 5)
    with pytest.raises(ValueError, match="ratio"):
        word_budget(1.5, 5)
