"""The claim verifier measured on validation sets its training never read, against the lexical
checker it joins.

    python -m bench.claim_verifier.evaluate [--weights DIR] [--limit N] [--judge-model SPEC]

One report of ``provenote verify``'s path (``verify_text``) per sentence gives three readers:
**words** (the deterministic checks alone, as before the verifier), **verifier** (its check
alone) and **both** (the checker as shipped: either one's hard failure makes a sentence
unsupported). Sets:

- SmolLM2's summaries of MTS-Dialog validation dialogues, labelled blind (``bench/data``):
  fabricated → unsupported (hard), supported → flagged at all, no claim → flagged at all;
- MTS-Dialog validation references, each sentence against its dialogue: unchanged → flagged;
  the word-level injections of ``bench.checker_quality`` → caught (hard); a meaning-level
  corruption of each (``bench.claim_verifier.corruptions``, the kinds training made on other
  sentences) → caught (hard);
- cost: the verifier's milliseconds per claim (batched, this machine's threads) and ``verify``
  with it against without it.

With ``--judge-model`` (``smollm2``, ``openai:URL#MODEL``, ``transformers:DIR``) a language model
judges each claim in the verifier's place (``pipeline.checking.model_judge``, the verifier
answering where the model gives no usable verdict): the "verifier" column is then the model's.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.checker_quality import INJECTIONS
from bench.checker_quality import VALIDATION as MTS_VALIDATION
from bench.claim_verifier.corruptions import CONTRADICTING, UNSUPPORTING
from bench.fabrications import SPLITS
from pipeline.backends.claim_judge import ClaimJudge, default_judge
from pipeline.checking.checker import SentenceReport
from pipeline.checking.claims import claim_problem
from pipeline.checking.entailment import Judge
from pipeline.checking.verify import units, verify_text
from pipeline.evidence.summary import CheckResult

READERS: dict[str, Callable[[str], bool]] = {
    "words": lambda check: check != "entailment",
    "verifier": lambda check: check == "entailment",
    "both": lambda check: True,
}


def _failed(sentence: SentenceReport, reader: str, hard_only: bool) -> list[CheckResult]:
    """The checks of ``reader`` that ``sentence`` failed (hard ones only, with ``hard_only``)."""
    return [
        check
        for check in sentence.checks
        if READERS[reader](check.check)
        and not check.passed
        and (check.severity == "hard" or not hard_only)
    ]


def _failing(sentence: SentenceReport, reader: str, hard_only: bool) -> list[str]:
    return [span for check in _failed(sentence, reader, hard_only) for span in check.spans]


def _flagged(sentence: SentenceReport, reader: str, hard_only: bool) -> bool:
    return bool(_failed(sentence, reader, hard_only))


class Tally:
    """Shares by (row, reader): hits over tries."""

    def __init__(self) -> None:
        self.hits: dict[tuple[str, str], int] = defaultdict(int)
        self.tries: dict[str, int] = defaultdict(int)

    def add(self, row: str, hits: dict[str, bool]) -> None:
        self.tries[row] += 1
        for reader, hit in hits.items():
            self.hits[row, reader] += hit

    def table(self, title: str) -> list[str]:
        lines = [
            f"### {title}",
            "",
            "| measure | n | words | verifier | both |",
            "|---|---|---|---|---|",
        ]
        for row, tries in self.tries.items():
            shares = " | ".join(f"{self.hits[row, r] / tries:.0%}" for r in READERS)
            lines.append(f"| {row} | {tries} | {shares} |")
        return lines


def smollm2_labels(judge: Judge, split: str, tally: Tally) -> None:
    source, labelled = SPLITS[split]
    with source.open(newline="", encoding="utf-8") as handle:
        dialogues = {row["ID"]: row["dialogue"] for row in csv.DictReader(handle)}
    for line in labelled.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        report = verify_text(dialogues[record["dialogue_id"]], record["sentence"], judge=judge)
        label = record["label"]
        hard_only = label == "fabricated"
        row = {
            "fabricated": "fabricated → unsupported (hard)",
            "supported": "supported → flagged at all",
            "no_claim": "no claim → flagged at all",
        }[label]
        tally.add(
            row,
            {r: any(_flagged(s, r, hard_only) for s in report.sentences) for r in READERS},
        )


def _claims(text: str) -> list[str]:
    return [u for u in units(text) if len(u.split()) >= 3 and claim_problem(u) is None]


def mts_references(judge: Judge, limit: int | None, tally: Tally) -> None:
    rng = random.Random(7)
    with MTS_VALIDATION.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:limit]
    for row in rows:
        dialogue, reference = row["dialogue"], row["section_text"]
        claims = _claims(reference)
        for claim in claims:
            report = verify_text(dialogue, claim, judge=judge)
            tally.add(
                "unchanged sentence → flagged at all",
                {r: any(_flagged(s, r, False) for s in report.sentences) for r in READERS},
            )
        for kind, inject in INJECTIONS.items():
            injection = inject(reference, dialogue)
            if injection is None:
                continue
            summary, words = injection
            report = verify_text(dialogue, summary, judge=judge)
            hits = {}
            for reader in READERS:
                spans = " ".join(
                    span for s in report.sentences for span in _failing(s, reader, True)
                ).lower()
                hits[reader] = all(word.lower() in spans for word in words)
            tally.add(f"word-level injection ({kind}) → caught (hard)", hits)
        if not claims:
            continue
        claim = rng.choice(claims)
        for family, corruptions in (
            ("contradicting", CONTRADICTING),
            ("unsupported", UNSUPPORTING),
        ):
            for corruption in rng.sample(corruptions, len(corruptions)):
                changed = corruption(claim, dialogue, rng)
                if changed and changed != claim:
                    report = verify_text(dialogue, changed, judge=judge)
                    tally.add(
                        f"meaning-level corruption, {family} → caught (hard)",
                        {r: any(_flagged(s, r, True) for s in report.sentences) for r in READERS},
                    )
                    break


def cost(judge: Judge, limit: int | None) -> list[str]:
    with MTS_VALIDATION.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[: limit or 40]
    pairs = [(row["section_text"][:300], row["dialogue"]) for row in rows]
    judge.judge(pairs[:2])
    started = time.perf_counter()
    judge.judge(pairs)
    per_claim = (time.perf_counter() - started) * 1000 / len(pairs)
    timings = {}
    for meaning in (False, True):
        started = time.perf_counter()
        for row in rows:
            verify_text(row["dialogue"], row["section_text"], judge=judge, meaning=meaning)
        timings[meaning] = time.perf_counter() - started
    return [
        "### Cost",
        "",
        f"- verifier: {per_claim:.1f} ms per claim, batched ({len(pairs)} MTS-Dialog pairs)",
        f"- `verify` with the verifier against without it: {timings[True] / timings[False]:.2f}×"
        f" ({len(rows)} references)",
    ]


def report(judge: Judge, limit: int | None) -> list[str]:
    lines = [f"Verifier cut-offs: {judge.config.model_dump()}", ""]
    for split in ("validation", "training"):
        tally = Tally()
        smollm2_labels(judge, split, tally)
        seen = (
            " (its supported and fabricated sentences were training pairs)"
            if split == "training"
            else ""
        )
        lines += [*tally.table(f"SmolLM2 sentences, MTS-Dialog {split} dialogues{seen}"), ""]
    tally = Tally()
    mts_references(judge, limit, tally)
    lines += [*tally.table("MTS-Dialog validation references"), ""]
    return lines + cost(judge, limit)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=None, help="a trained directory")
    parser.add_argument("--limit", type=int, default=None, help="MTS-Dialog references read")
    parser.add_argument("--judge-model", default=None, help="a language model as the judge")
    args = parser.parse_args(argv)
    if not MTS_VALIDATION.is_file():
        print(f"claim verifier: skipped, no {MTS_VALIDATION}")
        return
    verifier = ClaimJudge.load(args.weights) if args.weights else default_judge()
    judge: Judge = verifier
    if args.judge_model is not None:
        from smartapp.core.language_models import judging_model
        from smartapp.core.settings import Settings

        judge = judging_model(Settings(), args.judge_model, verifier)
    print("\n".join(report(judge, args.limit)))


if __name__ == "__main__":
    main()
