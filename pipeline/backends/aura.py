"""AURA: how much of a generated sentence's attention lands on the source, per sentence.

AgenticSum scores grounding by attention from generated tokens to the source. Its published code
computes this once, caches it, and skips notes over 2,048 tokens; here it is recomputed on every
pass, on any length, from a teacher-forced pass over the actual generation context (prompt,
source, and the summary as generated), read by a hook on the chosen layers that computes only the
summary's rows (:func:`pipeline.backends.attention.attention_rows_by_layer`).

Per generated token, following Lookback Lens (Chuang et al., 2024): the mean attention per source
token and the mean attention per previously generated token (averaged over heads and layers),
and the ratio source / (source + generated). Dividing each mass by its span's length keeps a long
source from winning by size. Sink and template tokens (BOS, instructions, separators) count in
neither span. A token with no earlier generated token has no ratio; a sentence's AURA is the mean
of its tokens' ratios, in [0, 1], or None when none of its tokens has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from pipeline.backends.attention import attention_rows_by_layer, layer_count


def _overlaps(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> bool:
    return span[1] > span[0] and any(span[0] < end and start < span[1] for start, end in spans)


def aura_scores(
    model: nn.Module,
    tokenizer: Any,
    *,
    context: str,
    source_spans: Sequence[tuple[int, int]],
    summary: str,
    sentence_spans: Sequence[tuple[int, int]],
    layers: Sequence[int] | None = None,
) -> list[float | None]:
    """AURA of each sentence (character spans in ``summary``) generated after ``context``.

    ``source_spans`` are the character spans of ``context`` that are source text; the rest of the
    context (instructions, template) is excluded as a sink.
    """
    text = context + summary
    encoded = tokenizer(text, add_special_tokens=True, return_offsets_mapping=True)
    offsets = [tuple(pair) for pair in encoded["offset_mapping"]]
    boundary = len(context)
    source = [i for i, span in enumerate(offsets) if _overlaps(span, source_spans)]
    generated = [i for i, (start, end) in enumerate(offsets) if end > start and start >= boundary]
    if not source or not generated:
        return [None] * len(sentence_spans)
    chosen = list(layers) if layers is not None else [layer_count(model) - 1]
    device = next(model.parameters()).device
    ids = torch.tensor([encoded["input_ids"]], device=device)
    by_layer = attention_rows_by_layer(model, ids, generated, chosen)
    attention = torch.stack([rows.mean(dim=0) for rows in by_layer.values()]).mean(dim=0)
    source_index = torch.tensor(source, device=attention.device)
    ratios: dict[int, float] = {}
    for row, position in enumerate(generated):
        earlier = [i for i in generated if i < position]
        if not earlier:
            continue
        per_source = attention[row, source_index].mean().item()
        per_generated = attention[row, torch.tensor(earlier, device=attention.device)].mean().item()
        total = per_source + per_generated
        if total > 0:
            ratios[position] = per_source / total
    scores: list[float | None] = []
    for start, end in sentence_spans:
        inside = [
            ratio
            for position, ratio in ratios.items()
            if _overlaps(
                (offsets[position][0] - boundary, offsets[position][1] - boundary), [(start, end)]
            )
        ]
        scores.append(sum(inside) / len(inside) if inside else None)
    return scores
