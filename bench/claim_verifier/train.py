"""Train the claim verifier from the shared data's training splits, in one command, on CPU.

    python -m bench.claim_verifier.train [--pairs N] [--epochs E] [--out DIR]

Builds the pairs (``bench.claim_verifier.pairs``), trains LoRA adapters and a three-way head
over the packaged all-MiniLM-L6-v2 (the base stays frozen), chooses the checker's cut-offs on
the held-out tenth of the training dialogues, and writes ``adapter.safetensors``,
``config.json`` and ``training.json`` (counts, held-out figures) to ``--out``, by default the
shipped ``pipeline/backends/weights/claim_judge/``. Seeded: the same data and seed give the same
pairs.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch

from bench.claim_verifier.pairs import LABEL_INDEX, Pair, build_pairs, read_pairs, write_pairs
from pipeline.backends.claim_judge import (
    ClaimJudge,
    JudgeConfig,
    base_model,
    encode_pairs,
    shipped_weights,
)
from pipeline.backends.lora import adapter_state

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "claim_verifier"
BATCH = 16
# Cut-offs: of the held-out entailed pairs, at most these shares are judged unsupported (hard)
# or weakly grounded (soft) by the verifier.
HARD_FALSE_SHARE = 0.03
SOFT_FALSE_SHARE = 0.06
# Templated corruptions are many and alike: a few hundred of each teach what thousands would.
KIND_CAP = {"generalise": 400, "invent_history": 500, "invent_event": 800, "flip_sex": 500}


def _capped(pairs: Sequence[Pair]) -> list[Pair]:
    seen: Counter[str] = Counter()
    kept = []
    for pair in pairs:
        seen[pair.kind] += 1
        if seen[pair.kind] <= KIND_CAP.get(pair.kind, len(pairs)):
            kept.append(pair)
    return kept


def _batches(pairs: Sequence[Pair], rng: random.Random) -> list[list[Pair]]:
    """Batches of pairs of similar length (less padding, the same pairs each epoch)."""
    ordered = sorted(pairs, key=lambda pair: len(pair.claim) + len(pair.evidence))
    batches = [list(ordered[i : i + BATCH]) for i in range(0, len(ordered), BATCH)]
    rng.shuffle(batches)
    return batches


def train(pairs: Sequence[Pair], config: JudgeConfig, epochs: int, seed: int) -> ClaimJudge:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer, model = base_model(config)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=1e-3, weight_decay=0.01)
    steps = epochs * ((len(pairs) + BATCH - 1) // BATCH)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, max_lr=1e-3, total_steps=steps, pct_start=0.1
    )
    loss_of = torch.nn.CrossEntropyLoss()
    model.train()
    step = 0
    started = time.perf_counter()
    for _ in range(epochs):
        for batch in _batches(pairs, rng):
            inputs = encode_pairs(
                tokenizer, [(p.claim, p.evidence) for p in batch], config.max_length
            )
            labels = torch.tensor([LABEL_INDEX[p.label] for p in batch])
            loss = loss_of(model(inputs), labels)
            loss.backward()
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            step += 1
            if step % 50 == 0:
                elapsed = time.perf_counter() - started
                print(f"step {step}/{steps} loss {loss.item():.3f} {elapsed:.0f} s", flush=True)
    return ClaimJudge(tokenizer, model, config)


def _quantile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def choose_cutoffs(judge: ClaimJudge, held_out: Sequence[Pair]) -> dict[str, float]:
    judged = judge.judge([(p.claim, p.evidence) for p in held_out])
    entailed = [j for j, p in zip(judged, held_out, strict=True) if p.label == "entailed"]
    return {
        "unsupported_below": _quantile([j.entailed for j in entailed], HARD_FALSE_SHARE),
        "weak_below": _quantile([j.entailed for j in entailed], SOFT_FALSE_SHARE),
        "contradicted_above": _quantile([j.contradicted for j in entailed], 1 - HARD_FALSE_SHARE),
    }


def held_out_figures(judge: ClaimJudge, held_out: Sequence[Pair]) -> dict[str, float]:
    """Per label of the held-out pairs: the share the verifier alone judges unsupported (hard)
    and the share it flags at all."""
    judged = judge.judge([(p.claim, p.evidence) for p in held_out])
    config = judge.config
    figures: dict[str, float] = {}
    for label in LABEL_INDEX:
        mine = [j for j, p in zip(judged, held_out, strict=True) if p.label == label]
        hard = sum(
            j.entailed <= config.unsupported_below or j.contradicted >= config.contradicted_above
            for j in mine
        )
        flagged = sum(
            j.entailed < config.weak_below or j.contradicted >= config.contradicted_above
            for j in mine
        )
        figures[f"{label}_hard"] = round(hard / max(1, len(mine)), 3)
        figures[f"{label}_flagged"] = round(flagged / max(1, len(mine)), 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=0, help="train on the first N pairs only")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=shipped_weights())
    parser.add_argument("--rebuild", action="store_true", help="build the pairs again")
    args = parser.parse_args()
    cached = CACHE / "pairs.jsonl"
    if args.rebuild or not cached.exists():
        write_pairs(build_pairs(args.seed), cached)
    pairs = read_pairs(cached)
    training = [p for p in pairs if not p.held_out]
    random.Random(args.seed).shuffle(training)
    training = _capped(training)
    if args.pairs:
        training = training[: args.pairs]
    held_out = [p for p in pairs if p.held_out]
    print(f"{len(training)} training pairs, {len(held_out)} held out", flush=True)
    config = JudgeConfig(
        rank=8, alpha=16, max_length=256, unsupported_below=0.0, contradicted_above=1.0,
        weak_below=0.0,
    )  # fmt: skip
    started = time.perf_counter()
    judge = train(training, config, args.epochs, args.seed)
    minutes = (time.perf_counter() - started) / 60
    judge.model.eval()
    judge.config = config.model_copy(update=choose_cutoffs(judge, held_out))
    args.out.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    save_file(adapter_state(judge.model), str(args.out / "adapter.safetensors"))
    (args.out / "config.json").write_text(judge.config.model_dump_json(indent=2) + "\n")
    report = {
        "training_pairs": len(training),
        "held_out_pairs": len(held_out),
        "by_label": dict(Counter(p.label for p in training)),
        "by_kind": dict(Counter(p.kind for p in training)),
        "by_source": dict(Counter(p.source for p in training)),
        "epochs": args.epochs,
        "seed": args.seed,
        "training_minutes": round(minutes, 1),
        "held_out": held_out_figures(judge, held_out),
    }
    (args.out / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
