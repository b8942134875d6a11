"""Note text addressed to a summarizing tool rather than to the people caring for the patient.

A note is untrusted text: "Note to the automated summary tool — please state: …" or
"[[assistant]] output this line: …" must never become a draft sentence. Keywords alone miss a
reworded instruction, so a small classifier reads each note sentence: logistic regression over
hashed word, word-pair and character n-grams, with two keyword features (the known instruction
patterns of ``pipeline.clinical.record_conflicts`` and chat role tags). It needs no model and
no torch, so the evidence path stays light. ``bench/addressed_text.py`` trains it from the
shared data's training splits and generated wordings; its weights ship in
``pipeline/backends/weights/addressed_text.json``. Text addressed to a nurse, a pharmacist, a
colleague or the patient is not addressed to a tool.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

from pipeline.clinical.record_conflicts import INSTRUCTION_LIKE, instruction_like
from pipeline.evidence.model import Fact, ReviewFlag, stable_id
from pipeline.text.sentences import split_sentences

# Chat templates' role markers: "[[assistant]]", "<|im_start|>", "<<SYS>>", "[INST]".
ROLE_TAG = re.compile(
    r"\[\[\s*\w+\s*\]\]|<\|[\w-]+\|>|<<\s*/?\s*sys\s*>>|\[/?inst\]", re.IGNORECASE
)
BUCKETS = 1 << 20
_TOKEN = re.compile(r"[a-z]+|[^\sa-z0-9]")


class AddressedTextWeights(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Hashed feature → weight; features absent here weigh nothing.
    weights: dict[int, float]
    bias: float
    threshold: float


def keyword_features(sentence: str) -> list[str]:
    """The keyword features a sentence has: the instruction patterns, a role tag."""
    found = []
    if INSTRUCTION_LIKE.search(sentence):
        found.append("k:instruction")
    if ROLE_TAG.search(sentence):
        found.append("k:role")
    return found


def features(sentence: str) -> set[int]:
    """The hashed features of one sentence: its words, word pairs and first words, character
    3- to 5-grams, and its keyword features."""
    lowered = " ".join(sentence.lower().split())
    tokens = _TOKEN.findall(lowered)
    named = [f"w:{t}" for t in tokens]
    named += [f"b:{a}_{b}" for a, b in itertools.pairwise(tokens)]
    named += [f"s{i}:{t}" for i, t in enumerate(tokens[:3])]
    padded = f" {lowered} "
    named += [f"c:{padded[i : i + n]}" for n in (3, 4, 5) for i in range(len(padded) - n + 1)]
    named += keyword_features(sentence)
    return {zlib.crc32(name.encode("utf-8")) % BUCKETS for name in named}


@lru_cache(maxsize=1)
def shipped_weights() -> AddressedTextWeights:
    path = resources.files("pipeline.backends").joinpath("weights", "addressed_text.json")
    return AddressedTextWeights.model_validate(json.loads(path.read_text(encoding="utf-8")))


def probabilities(
    sentences: Sequence[str], weights: AddressedTextWeights | None = None
) -> list[float]:
    """P(addressed to a tool) for each sentence."""
    chosen = weights or shipped_weights()
    scores = []
    for sentence in sentences:
        logit = chosen.bias + sum(chosen.weights.get(f, 0.0) for f in features(sentence))
        scores.append(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit)))))
    return scores


def addressed_sentences(texts: Sequence[str]) -> list[str | None]:
    """For each text, its first sentence addressed to a tool, or None."""
    threshold = shipped_weights().threshold
    found: list[str | None] = []
    for text in texts:
        pieces = [span.text for span in split_sentences(text) if span.kind != "header"] or [text]
        hits = [
            piece for piece, p in zip(pieces, probabilities(pieces), strict=True) if p >= threshold
        ]
        found.append(hits[0] if hits else None)
    return found


def set_aside(
    facts: Sequence[Fact], titles: Mapping[str, str]
) -> tuple[list[Fact], list[ReviewFlag]]:
    """The facts with note text addressed to a tool taken out (never evidence, so never quoted,
    cited or given to a model), and one review flag for each, naming the note (``titles``: by
    document id). Text the keyword patterns match is set aside even where the classifier is
    unsure: the classifier adds to the rules, it never overrules them."""
    texts = {
        fact.id: text
        for fact in facts
        if fact.id.startswith("note-")
        and isinstance(text := getattr(fact.attributes, "text", None), str)
    }
    found = dict(zip(texts, addressed_sentences(list(texts.values())), strict=True))
    kept: list[Fact] = []
    flags: list[ReviewFlag] = []
    for fact in facts:
        addressed = found.get(fact.id) or instruction_like(texts.get(fact.id, ""))
        if addressed is None:
            kept.append(fact)
            continue
        document = fact.sources[0].document if fact.sources else None
        title = titles.get(document or "", "A note")
        flags.append(
            ReviewFlag(
                id=stable_id("flag", "note_instruction", fact.id),
                code="note_instruction",
                reason=f'{title} holds text addressed to an AI summarizer ("{addressed}"): it was '
                "set aside, never evidence and never followed; check who wrote it and what the "
                "note should say",
                raised_by="addressed_text",
                document=document,
            )
        )
    return kept, flags
