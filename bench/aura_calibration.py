"""AURA's threshold τ, calibrated with the real model on the MTS-Dialog training split.

AURA flags a sentence as weakly grounded when its score is below τ. The score is read from the
attention of the model that wrote the sentence (``pipeline.backends.aura``), so τ belongs to the
model: here SmolLM2-135M-Instruct, the packaged model.

The calibration set is the labelled one of ``bench/fabrications.py``: SmolLM2's own summaries of
MTS-Dialog *training* dialogues, each sentence labelled fabricated, supported or without a claim
against its dialogue. Each summary is read teacher-forced after the prompt that produced it
(the dialogue is the source span), giving every sentence its AURA. Over the sentences that make
a claim, τ is the threshold that best separates fabricated from supported (Youden's J: the share
of fabrications flagged minus the share of supported sentences flagged, at its largest), and the
table gives that τ beside the default in force, with the ROC area (the chance that a fabricated
sentence scores below a supported one) and AURA's agreement with the checker
(``pipeline.checking.verify``: flagged at all).

Run: ``python -m bench.aura_calibration`` (about a minute on 2 cores once the model is converted
into ``data/models``).
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict

from bench.fabrications import LABELLED, PROMPT, ROOT, TRAINING
from pipeline.checking.verify import verify_text
from pipeline.settings import DEFAULT_AURA_TAU


def scored_sentences() -> list[tuple[str, float | None, bool]]:
    """(label, AURA, flagged by the checker) of each labelled sentence."""
    from smartapp.core.language_models import language_model
    from smartapp.core.settings import Settings

    with TRAINING.open(newline="", encoding="utf-8") as handle:
        dialogues = {row["ID"]: row["dialogue"] for row in csv.DictReader(handle)}
    by_dialogue: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in LABELLED.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            by_dialogue[record["dialogue_id"]].append(record)
    model = language_model(Settings(data_dir=ROOT / "data"), "smollm2")
    assert model is not None and model.grounding is not None
    out = []
    for dialogue_id, records in by_dialogue.items():
        dialogue = dialogues[dialogue_id]
        context = f"{PROMPT}\n\n{dialogue}"
        summary, spans = "", []
        for record in records:
            start = len(summary) + (1 if summary else 0)
            summary = f"{summary} {record['sentence']}" if summary else record["sentence"]
            spans.append((start, len(summary)))
        scores = model.grounding(context, [(len(PROMPT) + 2, len(context))], summary, spans)
        for record, score in zip(records, scores, strict=True):
            report = verify_text(dialogue, record["sentence"])
            flagged = any(not c.passed for s in report.sentences for c in s.checks)
            out.append((record["label"], score, flagged))
    return out


def youden(fabricated: list[float], supported: list[float]) -> tuple[float, float]:
    """(τ, J) where flagging scores below τ best separates the two groups."""
    best = (0.0, -1.0)
    for tau in sorted({*fabricated, *supported, 1.0}):
        caught = sum(score < tau for score in fabricated) / len(fabricated)
        false = sum(score < tau for score in supported) / len(supported)
        if caught - false > best[1]:
            best = (tau, caught - false)
    return best


def roc_area(fabricated: list[float], supported: list[float]) -> float:
    pairs = [(f < s) + 0.5 * (f == s) for f in fabricated for s in supported]
    return sum(pairs) / len(pairs)


def main() -> None:
    scored = scored_sentences()
    fabricated = [s for label, s, _ in scored if label == "fabricated" and s is not None]
    supported = [s for label, s, _ in scored if label == "supported" and s is not None]
    tau, j = youden(fabricated, supported)
    from smartapp.core.packaged_model import SMOLLM2_TAU

    print(f"AURA with SmolLM2-135M-Instruct on {len(scored)} labelled training sentences")
    for label in ("fabricated", "supported", "no_claim"):
        scores = sorted(s for name, s, _ in scored if name == label and s is not None)
        if scores:
            print(
                f"  {label}: {len(scores)} scored, median {scores[len(scores) // 2]:.3f}, "
                f"range {scores[0]:.3f}–{scores[-1]:.3f}"
            )
    print(f"ROC area (fabricated below supported): {roc_area(fabricated, supported):.2f}")
    print("| τ | fabricated flagged | supported flagged | agreement with the checker |")
    print("|---|---|---|---|")
    claims = [(s, flagged) for label, s, flagged in scored if label != "no_claim" and s is not None]
    for name, value in (
        (f"calibrated here {tau:.4f} (J {j:.2f})", tau),
        (f"SmolLM2's, in force {SMOLLM2_TAU}", SMOLLM2_TAU),
        (f"AgenticSum's {DEFAULT_AURA_TAU}", DEFAULT_AURA_TAU),
    ):
        caught = sum(s < value for s in fabricated) / len(fabricated)
        false = sum(s < value for s in supported) / len(supported)
        agree = sum((s < value) == flagged for s, flagged in claims) / len(claims)
        print(f"| {name} | {caught:.0%} | {false:.0%} | {agree:.0%} |")


if __name__ == "__main__":
    main()
