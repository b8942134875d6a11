"""The verifier's (claim, evidence, label) pairs, from the shared data's training splits only.

- **MTS-Dialog training set**: each reference summary sentence against its dialogue, entailed;
  the same sentence corrupted (``corruptions``), contradicted or neutral; another dialogue's
  sentence of the same section, neutral.
- **ACI-BENCH training notes**: note sentences against the visit's dialogue, the same way.
- **The written text itself**: for two in five of those, each sentence (copied, entailed) and its
  corruptions against the summary or note it comes from, as the checker reads a model's
  sentence against the note sentences it cites.
- **SmolLM2's labelled sentences of the training split** (``bench/data``): supported entailed,
  fabricated and claimless neutral.

Every claim is read against ``pipeline.checking.entailment.evidence_window`` of its source, as
the checker reads it. A tenth of the MTS-Dialog dialogues (by id) is held out of training to
choose the checker's cut-offs. MTS-Dialog's validation set, ACI-BENCH's and the validation
sentences of ``bench/data`` are never read here.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.claim_verifier.corruptions import CONTRADICTING, UNSUPPORTING, Corruption
from pipeline.backends.retrieval import nearest
from pipeline.checking.claims import claim_problem
from pipeline.checking.entailment import NEAREST_SENTENCES, evidence_window
from pipeline.checking.verify import units

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
MTS_TRAINING = SHARED / "mts-dialog" / "MTS-Dialog-TrainingSet.csv"
ACI_TRAINING = SHARED / "aci-bench" / "train.csv"
SMOLLM2_TRAINING = ROOT / "bench" / "data" / "smollm2_fabrications.jsonl"
LABEL_INDEX = {"entailed": 0, "neutral": 1, "contradicted": 2}
HELD_OUT_SHARE = 0.1
ACI_SENTENCES_PER_NOTE = 30
# The share of documents whose claims are also paired with their own written text.
WRITTEN_SHARE = 0.4


@dataclass(frozen=True)
class Pair:
    claim: str
    evidence: str
    label: str
    source: str  # where the claim came from: mts, aci, smollm2
    kind: str  # how it was made: reference, a corruption's name, other_reference, labelled
    held_out: bool


@dataclass(frozen=True)
class _Document:
    key: str
    source: str
    claims: list[str]
    units: list[str]
    section: str


def _claims(text: str) -> list[str]:
    return [
        sentence
        for sentence in units(text)
        if len(sentence.split()) >= 3 and claim_problem(sentence) is None
    ]


def _mts_documents() -> list[_Document]:
    with MTS_TRAINING.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [
        _Document(f"mts-{row['ID']}", "mts", _claims(row["section_text"]), units(row["dialogue"]),
                  row["section_header"])
        for row in rows
    ]  # fmt: skip


def _aci_documents(rng: random.Random) -> list[_Document]:
    with ACI_TRAINING.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    documents = []
    for row in rows:
        claims = _claims(row["note"])
        rng.shuffle(claims)
        documents.append(
            _Document(f"aci-{row['encounter_id']}", "aci", claims[:ACI_SENTENCES_PER_NOTE],
                      units(row["dialogue"]), "note")
        )  # fmt: skip
    return documents


def _windows(claims: Sequence[str], source_units: Sequence[str]) -> list[str]:
    found = nearest(claims, source_units, NEAREST_SENTENCES)
    return [evidence_window(source_units, indices) for indices in found]


def _corrupted(
    claim: str, whole: str, corruptions: Sequence[Corruption], tries: int, rng: random.Random
) -> tuple[str, str] | None:
    """The claim changed by the first of ``tries`` corruptions (in random order) that applies,
    and that corruption's name."""
    for corruption in rng.sample(list(corruptions), len(corruptions))[:tries]:
        changed = corruption(claim, whole, rng)
        if changed and changed != claim:
            return changed, corruption.__name__
    return None


def _document_pairs(
    document: _Document, others: Sequence[str], held_out: bool, rng: random.Random
) -> Iterator[Pair]:
    if not document.claims or not document.units:
        return
    made: list[tuple[str, str, str]] = [
        (claim, "entailed", "reference") for claim in document.claims
    ]
    whole = "\n".join(document.units)
    for claim in document.claims:
        for label, corruptions, tries in (
            ("contradicted", CONTRADICTING, 2),
            ("neutral", UNSUPPORTING, 3),
        ):
            found = _corrupted(claim, whole, corruptions, tries, rng)
            if found is not None:
                made.append((found[0], label, found[1]))
    if others:
        made.append((rng.choice(others), "neutral", "other_reference"))
    windows = _windows([claim for claim, _, _ in made], document.units)
    for (claim, label, kind), window in zip(made, windows, strict=True):
        yield Pair(claim, window, label, document.source, kind, held_out)


def _smollm2_pairs() -> Iterator[Pair]:
    with MTS_TRAINING.open(newline="", encoding="utf-8") as handle:
        dialogues = {row["ID"]: row["dialogue"] for row in csv.DictReader(handle)}
    rows = [json.loads(line) for line in SMOLLM2_TRAINING.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        source_units = units(dialogues[row["dialogue_id"]])
        (window,) = _windows([row["sentence"]], source_units)
        label = "entailed" if row["label"] == "supported" else "neutral"
        yield Pair(row["sentence"], window, label, "smollm2", "labelled", False)


def _as_written(documents: Sequence[_Document], rng: random.Random) -> list[_Document]:
    """The same claims against the written text they come from (the summary or note itself, as
    the checker reads a sentence against the note sentences it cites): a copied sentence is
    entailed, and a corrupted one is read beside the very words it changed."""
    chosen = rng.sample(list(documents), int(len(documents) * WRITTEN_SHARE))
    return [
        _Document(f"{d.key}-written", f"{d.source}-written", d.claims, list(d.claims), d.section)
        for d in chosen
    ]


def build_pairs(seed: int = 13) -> list[Pair]:
    rng = random.Random(seed)
    documents = _mts_documents() + _aci_documents(rng)
    held = {
        documents[i].key
        for i in rng.sample(range(len(documents)), int(len(documents) * HELD_OUT_SHARE))
        if documents[i].source == "mts"
    }
    documents += _as_written(documents, rng)
    by_section: dict[str, list[str]] = {}
    for document in documents:
        by_section.setdefault(document.section, []).extend(document.claims)
    pairs: list[Pair] = []
    for document in documents:
        others = [c for c in by_section[document.section] if c not in document.claims]
        held_out = document.key.removesuffix("-written") in held
        pairs += _document_pairs(document, others, held_out, rng)
    pairs += _smollm2_pairs()
    return pairs


def write_pairs(pairs: Sequence[Pair], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps(asdict(pair)) + "\n")


def read_pairs(path: Path) -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
