"""Attention rows of one layer, read by a hook that computes only the rows asked for.

``output_attentions=True`` materialises every layer's full (heads × tokens × tokens) matrix: 4 GB
per layer at 8k tokens and 16 heads. Salience needs one layer and a few query rows, so a forward
pre-hook on that layer's attention module captures its input, the forward pass is stopped there
(later layers never run), and the softmax rows are recomputed from the module's own projections
for the requested rows only: memory O(heads × rows × tokens).

Two module families are supported: BERT-style encoders (``query``/``key`` projections, absolute
positions, bidirectional) and Llama-family decoders (``q_proj``/``k_proj``, rotary positions,
grouped key/value heads, causal mask).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from pipeline.errors import ModelError

_LAYER_LISTS = (
    "model.layers",
    "layers",
    "encoder.layer",
    "bert.encoder.layer",
    "model.encoder.layer",
)


class UnsupportedModelError(ModelError, TypeError):
    """The model's layers or attention modules are not of a family this module can read."""


class _StopForwardSignal(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by the hook: the layers after the one we read need not run."""


def _attribute_path(root: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


def attention_module(model: nn.Module, layer: int) -> nn.Module:
    for dotted in _LAYER_LISTS:
        layers = _attribute_path(model, dotted)
        if isinstance(layers, nn.ModuleList):
            block: Any = layers[layer]
            attention = getattr(block, "self_attn", None)
            if isinstance(attention, nn.Module):
                return attention
            module = _attribute_path(block, "attention.self")
            if isinstance(module, nn.Module):
                return module
    raise UnsupportedModelError(f"cannot find attention layers in {type(model).__name__}")


def layer_count(model: nn.Module) -> int:
    for dotted in _LAYER_LISTS:
        layers = _attribute_path(model, dotted)
        if isinstance(layers, nn.ModuleList):
            return len(layers)
    raise UnsupportedModelError(f"cannot find attention layers in {type(model).__name__}")


def is_causal(model: nn.Module) -> bool:
    return bool(getattr(attention_module(model, 0), "is_causal", False))


def _rotate_half(states: torch.Tensor) -> torch.Tensor:
    half = states.shape[-1] // 2
    return torch.cat((-states[..., half:], states[..., :half]), dim=-1)


def _rotary(states: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding; ``states`` is (heads, tokens, dim), cos/sin (tokens, dim)."""
    return states * cos.unsqueeze(0) + _rotate_half(states) * sin.unsqueeze(0)


def _decoder_rows(
    module: Any, hidden: torch.Tensor, rows: torch.Tensor, position_embeddings: Any
) -> torch.Tensor:
    # ``module`` is a transformers attention layer, whose projections are plain attributes.
    head_dim = module.head_dim
    tokens = hidden.shape[0]
    query = module.q_proj(hidden[rows]).view(len(rows), -1, head_dim).transpose(0, 1)
    key = module.k_proj(hidden).view(tokens, -1, head_dim).transpose(0, 1)
    if position_embeddings is None:
        raise UnsupportedModelError("decoder attention without position embeddings")
    cos, sin = (part[0] for part in position_embeddings)
    query = _rotary(query, cos[rows], sin[rows])
    key = _rotary(key, cos, sin)
    key = key.repeat_interleave(query.shape[0] // key.shape[0], dim=0)
    scores: torch.Tensor = (query @ key.transpose(-1, -2)).float() * module.scaling
    future = torch.arange(tokens, device=hidden.device).unsqueeze(0) > rows.unsqueeze(1)
    return scores.masked_fill(future.unsqueeze(0), float("-inf"))


def _encoder_rows(module: Any, hidden: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    head_dim = module.attention_head_size
    tokens = hidden.shape[0]
    query = module.query(hidden[rows]).view(len(rows), -1, head_dim).transpose(0, 1)
    key = module.key(hidden).view(tokens, -1, head_dim).transpose(0, 1)
    scores: torch.Tensor = (query @ key.transpose(-1, -2)).float() * module.scaling
    return scores


def _rows_of(module: nn.Module, captured: dict[str, Any], rows: Sequence[int]) -> torch.Tensor:
    hidden = captured["hidden"][0]
    index = torch.as_tensor(list(rows), dtype=torch.long, device=hidden.device)
    if hasattr(module, "q_proj"):
        scores = _decoder_rows(module, hidden, index, captured["position_embeddings"])
    elif hasattr(module, "query"):
        scores = _encoder_rows(module, hidden, index)
    else:
        raise UnsupportedModelError(f"unsupported attention module {type(module).__name__}")
    return torch.softmax(scores, dim=-1)


@torch.no_grad()
def attention_rows_by_layer(
    model: nn.Module, input_ids: torch.Tensor, rows: Sequence[int], layers: Sequence[int]
) -> dict[int, torch.Tensor]:
    """Softmax attention for query positions ``rows`` in each of ``layers``.

    Each value is (heads, len(rows), tokens); the forward pass stops at the last layer asked for.
    ``input_ids`` is one unpadded sequence of shape (1, tokens).
    """
    if input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ValueError("attention rows are read from one unpadded sequence of shape (1, tokens)")
    if not layers:
        raise ValueError("name at least one layer")
    last = max(layers)
    modules = {layer: attention_module(model, layer) for layer in sorted(set(layers))}
    captured: dict[int, dict[str, Any]] = {}
    handles = []
    for layer, module in modules.items():

        def capture(
            _: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], layer: int = layer
        ) -> None:
            captured[layer] = {
                "hidden": args[0] if args else kwargs["hidden_states"],
                "position_embeddings": kwargs.get(
                    "position_embeddings", args[1] if len(args) > 1 else None
                ),
            }
            if layer == last:
                raise _StopForwardSignal

        handles.append(module.register_forward_pre_hook(capture, with_kwargs=True))
    try:
        model(input_ids=input_ids)
    except _StopForwardSignal:
        pass
    finally:
        for handle in handles:
            handle.remove()
    missing = [layer for layer in modules if layer not in captured]
    if missing:
        raise UnsupportedModelError(f"layers {missing} were never called")
    return {layer: _rows_of(modules[layer], captured[layer], rows) for layer in modules}


def attention_rows(
    model: nn.Module, input_ids: torch.Tensor, rows: Sequence[int], layer: int
) -> torch.Tensor:
    """Softmax attention of ``layer`` for query positions ``rows``: (heads, len(rows), tokens)."""
    return attention_rows_by_layer(model, input_ids, rows, [layer])[layer]
