"""The fact checker measured on MTS-Dialog validation: false flags and injected errors caught.

Each reference section summary is checked against its own dialogue (``provenote verify``'s
path: ``pipeline.checking.verify.verify_text``):

- **unchanged**: the share of references with a sentence judged *unsupported* (hard checks), and
  the share with any flag at all (hard or soft, "weak grounding");
- **injected**: the same reference with one error put in, of each kind where the reference
  allows it: a number changed, a drug swapped, a denied finding asserted, an age or a sex
  invented. An error is caught when the injected words are among the failing spans: by the hard
  checks alone (the sentence is then unsupported), and by hard + soft.

Targets (issue #14): at least 95 % of injected errors caught by the hard checks, at most 10 % of
unchanged references judged unsupported.

Run: ``python -m bench.checker_quality [--limit N]``.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pipeline.checking.checker import drug_lexicon
from pipeline.checking.verify import verify_text
from pipeline.text.words import FUNCTION_WORDS

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mts-dialog"
VALIDATION = DATA / "MTS-Dialog-ValidationSet.csv"
# An injection: (the changed summary, the injected words that must be flagged), or None.
Injection = tuple[str, list[str]] | None


def _absent(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.I) is None


def number_changed(reference: str, dialogue: str) -> Injection:
    for match in re.finditer(r"(?<![\w/.])\d+(?:\.\d+)?(?![\w/])(?!\.\s)", reference):
        wrong = str(int(float(match.group(0))) + 7) + "7"
        if _absent(wrong, dialogue):
            return reference[: match.start()] + wrong + reference[match.end() :], [wrong]
    return None


def drug_swapped(reference: str, dialogue: str) -> Injection:
    lexicon = drug_lexicon()
    drugs = [word for word in re.findall(r"[A-Za-z]+", reference) if word.lower() in lexicon]
    for swap in ("warfarin", "digoxin", "amiodarone"):
        if drugs and _absent(swap, dialogue) and _absent(swap, reference):
            changed = re.sub(rf"\b{re.escape(drugs[0])}\b", swap, reference, count=1)
            return changed, [swap]
    return None


def negation_flipped(reference: str, dialogue: str) -> Injection:
    for match in re.finditer(
        r"\b(?P<cue>[Nn]o|[Dd]enies|[Dd]enied|[Nn]egative for) (?:any )?(?P<finding>[a-z]{4,})\b",
        reference,
    ):
        finding = match.group("finding")
        if finding in FUNCTION_WORDS:
            continue
        asserted = ("Has " if match.group("cue")[0].isupper() else "has ") + finding
        return reference[: match.start()] + asserted + reference[match.end() :], [finding]
    return None


def age_invented(reference: str, dialogue: str) -> Injection:
    for age in (47, 83, 19):
        if _absent(str(age), dialogue) and _absent(str(age), reference):
            return f"The patient is {age} years old. {reference}", [f"{age}"]
    return None


def sex_invented(reference: str, dialogue: str) -> Injection:
    """A sex the dialogue contradicts: the other one than its words and pronouns say."""
    female = re.search(r"\b(she|her|hers|mrs|ms|miss|woman|female|lady|girl)\b", dialogue, re.I)
    male = re.search(r"\b(he|him|his|mr|sir|man|male|gentleman|boy)\b", dialogue, re.I)
    if bool(female) == bool(male):
        sex = "woman" if female is None else None  # neither: any sex is invented
    else:
        sex = "man" if female else "woman"
    if sex is None:
        return None
    return f"The patient is a {sex}. {reference}", [sex]


INJECTIONS: dict[str, Callable[[str, str], Injection]] = {
    "number changed": number_changed,
    "drug swapped": drug_swapped,
    "negation flipped": negation_flipped,
    "age invented": age_invented,
    "sex invented": sex_invented,
}


def caught(dialogue: str, summary: str, injected: list[str]) -> tuple[bool, bool]:
    """(caught by the hard checks, caught by hard + soft)."""
    hard: list[str] = []
    every: list[str] = []
    for sentence in verify_text(dialogue, summary).sentences:
        for check in sentence.checks:
            if not check.passed:
                every += check.spans
                if check.severity == "hard":
                    hard += check.spans

    def found(spans: list[str]) -> bool:
        joined = " ".join(spans).lower()
        return all(word.lower() in joined for word in injected)

    return found(hard), found(every)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    if not VALIDATION.is_file():
        print(f"checker quality: skipped, no {VALIDATION}")
        return
    with VALIDATION.open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))[: args.limit]
    unsupported = flagged = 0
    tried: Counter[str] = Counter()
    by_hard: Counter[str] = Counter()
    by_both: Counter[str] = Counter()
    for row in rows:
        dialogue, reference = row["dialogue"], row["section_text"]
        report = verify_text(dialogue, reference)
        unsupported += any(s.verdict == "unsupported" for s in report.sentences)
        flagged += any(s.verdict == "unsupported" or s.weakly_grounded for s in report.sentences)
        for kind, inject in INJECTIONS.items():
            injection = inject(reference, dialogue)
            if injection is None:
                continue
            summary, words = injection
            hard, both = caught(dialogue, summary, words)
            tried[kind] += 1
            by_hard[kind] += hard
            by_both[kind] += both
    total = len(rows)
    print(f"MTS-Dialog validation, {total} references checked against their own dialogue")
    print(f"unchanged, judged unsupported (hard): {unsupported / total:.1%} ({unsupported})")
    print(f"unchanged, flagged at all (hard or soft): {flagged / total:.1%} ({flagged})")
    print(f"{'injected error':<18}{'tried':>7}{'hard':>9}{'hard+soft':>11}")
    for kind in INJECTIONS:
        if tried[kind]:
            print(
                f"{kind:<18}{tried[kind]:>7}{by_hard[kind] / tried[kind]:>9.1%}"
                f"{by_both[kind] / tried[kind]:>11.1%}"
            )
    all_tried = sum(tried.values())
    print(
        f"{'all':<18}{all_tried:>7}{sum(by_hard.values()) / all_tried:>9.1%}"
        f"{sum(by_both.values()) / all_tried:>11.1%}"
    )


if __name__ == "__main__":
    main()
