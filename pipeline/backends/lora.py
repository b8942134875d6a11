"""Low-rank adapters (LoRA, Hu et al. 2021) on a packaged encoder's linear layers.

The claim verifier is all-MiniLM-L6-v2 plus a few hundred thousand trained weights: the base
stays the package's, frozen, and only the adapters and the head ship in the repository (a full
fine-tune would ship 90 MB). Each adapted layer computes ``W x + (B A x) * alpha / rank``; ``B``
starts at zero, so an untrained adapter leaves the encoder exactly as packaged.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# The linear layers of a BERT encoder that are adapted: attention and feed-forward.
ADAPTED_LAYERS = ("query", "key", "value", "attention.output.dense", "intermediate.dense")


class LoraLinear(nn.Module):
    """A frozen linear layer with a trainable low-rank update beside it."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        for parameter in base.parameters():
            parameter.requires_grad = False
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        update = (inputs @ self.lora_a.T) @ self.lora_b.T
        frozen: torch.Tensor = self.base(inputs)
        return frozen + update * self.scale


def add_adapters(encoder: nn.Module, rank: int, alpha: float) -> None:
    """Replace each adapted linear layer of ``encoder`` by its LoRA wrapper, in place, and
    freeze everything else."""
    for parameter in encoder.parameters():
        parameter.requires_grad = False
    targets = [
        name
        for name, module in encoder.named_modules()
        if isinstance(module, nn.Linear) and name.endswith(ADAPTED_LAYERS)
    ]
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = encoder.get_submodule(parent_name)
        setattr(parent, child, LoraLinear(getattr(parent, child), rank, alpha))


def merge_adapters(module: nn.Module) -> None:
    """Fold each adapter into its frozen layer, in place: ``W + (B A) * alpha / rank`` as one
    plain linear layer. Judging needs no separate low-rank path, and one product per layer
    instead of three is what a claim costs less (the outputs are the same to float rounding);
    training keeps the adapters apart, since only they are trained and shipped."""
    for name, child in list(module.named_children()):
        if not isinstance(child, LoraLinear):
            merge_adapters(child)
            continue
        base = child.base
        merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None)
        with torch.no_grad():
            merged.weight.copy_(base.weight + (child.lora_b @ child.lora_a) * child.scale)
            if base.bias is not None:
                merged.bias.copy_(base.bias)
        merged.requires_grad_(False)
        setattr(module, name, merged)


def adapter_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """The weights that were trained (adapters and head): what ships."""
    return {
        name: parameter.detach().clone()
        for name, parameter in module.named_parameters()
        if parameter.requires_grad
    }
