"""The checker against real fabrications: SmolLM2's own summaries of MTS-Dialog dialogues, each
sentence labelled by a careful reader against its dialogue.

``--generate`` writes the set: SmolLM2-135M-Instruct's plain summary (greedy, no loop, no
checker) of the first dialogues of the MTS-Dialog *training* split, split into sentences, into
``bench/data/smollm2_fabrications.jsonl`` with an empty label. Each sentence is then labelled by
hand (the validation split's and ``training_more``'s by a reader who saw only the dialogue and
the sentences), with the reason: ``fabricated`` (a clinical claim the dialogue does not support),
``supported`` (a clinical claim it supports) or ``no_claim`` (meta text, an echo of the
instruction, nothing about the patient). The checker's rules were not tuned on this set.

Without ``--generate``, the checker (``pipeline.checking.verify.verify_text``, as ``provenote
verify``) judges every labelled sentence against its dialogue, and the table gives, per label, the
share judged unsupported (hard), the share flagged at all (hard or soft), the share passed
unflagged, and the share the agentic loop would let into a draft at all
(``pipeline.summarizing.draft_agent.kept_in_draft``: no meta text, no sentence without a claim).
Targets (#24): at least 90 % of fabrications hard, at most 10 % of supported
sentences flagged at all, no sentence without a claim passed unflagged.

Run: ``python -m bench.fabrications [--generate N [--after M] [--out PATH]]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from pipeline.checking.verify import verify_text
from pipeline.summarizing.draft_agent import kept_in_draft
from pipeline.text.sentences import split_sentences

ROOT = Path(__file__).resolve().parents[1]
MTS_DIALOG = ROOT.parent / "shared" / "data" / "mts-dialog"
# The rules were tuned on the training set's labels; the validation set's are held out, read
# only to measure.
SPLITS = {
    "training": (
        MTS_DIALOG / "MTS-Dialog-TrainingSet.csv",
        ROOT / "bench" / "data" / "smollm2_fabrications.jsonl",
    ),
    "validation": (
        MTS_DIALOG / "MTS-Dialog-ValidationSet.csv",
        ROOT / "bench" / "data" / "smollm2_fabrications_validation.jsonl",
    ),
    # Training dialogues 15-44, labelled blind after the shipped verifier was trained: no
    # training pair holds these sentences yet, nor was any rule tuned on them.
    "training_more": (
        MTS_DIALOG / "MTS-Dialog-TrainingSet.csv",
        ROOT / "bench" / "data" / "smollm2_fabrications_more.jsonl",
    ),
}
TRAINING, LABELLED = SPLITS["training"]
PROMPT = "Summarize this doctor-patient conversation for the medical record, in a few sentences."


def source_prompt(dialogue: str) -> str:
    """The prompt the summary was written from, the dialogue marked as data (as the pipeline's
    prompts mark their sources), so that copying the dialogue is not restating the prompt."""
    return f"{PROMPT}\n\n<data>{dialogue}</data>"


def _labelled(path: Path) -> bool:
    """Whether ``path`` holds any labelled sentence (a reader's hours, never overwritten)."""
    if not path.is_file():
        return False
    return any(json.loads(line).get("label") for line in path.read_text().splitlines() if line)


def generate(count: int, split: str, after: int = 0, out: Path | None = None) -> None:
    """SmolLM2's summaries of ``count`` dialogues of the split, the first ``after`` skipped, to
    ``out`` (by default the split's file), each sentence unlabelled; a file that holds labels is
    never overwritten."""
    from smartapp.core.language_models import language_model
    from smartapp.core.settings import Settings

    source, labelled = SPLITS[split]
    labelled = out or labelled
    if _labelled(labelled):
        raise SystemExit(f"{labelled} holds labelled sentences: write elsewhere with --out")
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[after : after + count]
    with tempfile.TemporaryDirectory() as cache:
        model = language_model(Settings(data_dir=Path(cache)), "smollm2")
        assert model is not None
        labelled.parent.mkdir(parents=True, exist_ok=True)
        with labelled.open("w", encoding="utf-8") as out:
            for row in rows:
                messages = [{"role": "user", "content": f"{PROMPT}\n\n{row['dialogue']}"}]
                summary = model.backend.complete(messages, max_tokens=200).text
                for sentence in split_sentences(summary):
                    record = {
                        "dialogue_id": row["ID"],
                        "sentence": sentence.text,
                        "label": "",
                        "reason": "",
                    }
                    out.write(json.dumps(record) + "\n")


def measure(split: str) -> None:
    source, labelled = SPLITS[split]
    with source.open(newline="", encoding="utf-8") as handle:
        dialogues = {row["ID"]: row["dialogue"] for row in csv.DictReader(handle)}
    records = [json.loads(line) for line in labelled.read_text().splitlines() if line.strip()]
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        report = verify_text(dialogues[record["dialogue_id"]], record["sentence"])
        verdicts = [sentence.verdict for sentence in report.sentences]
        flags = [not all(c.passed for c in sentence.checks) for sentence in report.sentences]
        label = record["label"]
        counts[label]["sentences"] += 1
        counts[label]["hard"] += "unsupported" in verdicts
        counts[label]["flagged"] += any(flags)
        prompt = source_prompt(dialogues[record["dialogue_id"]])
        counts[label]["drafted"] += kept_in_draft(record["sentence"], prompt)
    print(f"SmolLM2 summaries of MTS-Dialog {split} dialogues, {len(records)} sentences")
    print(
        "| label | sentences | unsupported (hard) | flagged at all | passed unflagged "
        "| would reach a model's draft |"
    )
    print("|---|---|---|---|---|---|")
    for label in ("fabricated", "supported", "no_claim"):
        found = counts[label]
        total = max(found["sentences"], 1)
        print(
            f"| {label} | {found['sentences']} | {found['hard'] / total:.0%} "
            f"| {found['flagged'] / total:.0%} | {1 - found['flagged'] / total:.0%} "
            f"| {found['drafted'] / total:.0%} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--generate", type=int, default=0, metavar="N")
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--after", type=int, default=0, help="dialogues skipped (--generate)")
    parser.add_argument("--out", type=Path, default=None, help="where --generate writes")
    options = parser.parse_args()
    splits = list(SPLITS) if options.split == "all" else [options.split]
    if options.out is not None and len(splits) > 1:
        parser.error("--out writes one split: name it with --split")
    for split in splits:
        if options.generate:
            generate(options.generate, split, options.after, options.out)
        else:
            measure(split)


if __name__ == "__main__":
    main()
