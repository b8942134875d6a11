"""The meaning check: a sentence is unsupported when the trained claim verifier
(``pipeline.backends.claim_judge``) is confident its evidence does not entail it, or contradicts
it; weakly grounded when the verifier is unsure. The deterministic checks (numbers, dates,
drugs, negation) run beside it and still decide on their own: a deterministic contradiction
always wins, and the verifier never clears a sentence another hard check failed.

The verifier reads a window of the source, not all of it: the whole source when it is short (a
dialogue of a few turns), else the sentences most similar to the claim, in source order, so
that a question and its answer stay together, as many as fit. Training builds its pairs with
this window (the shipped weights were trained before the fitting was added: long sources then
gave the 6 nearest sentences, cut at 256 tokens).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pipeline.backends.claim_judge import JudgeConfig, Judgement
from pipeline.evidence.summary import CheckResult, Severity


class Judge(Protocol):
    """What the meaning check asks of a judge: the shipped verifier
    (``pipeline.backends.claim_judge.ClaimJudge``) or a language model
    (``pipeline.checking.model_judge.ModelJudge``)."""

    @property
    def config(self) -> JudgeConfig: ...

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]: ...


# A source this short is read whole; a longer one through the claim's nearest sentences.
WHOLE_SOURCE_WORDS = 220
NEAREST_SENTENCES = 6


def evidence_window(units: Sequence[str], nearest: Sequence[int]) -> str:
    """What the verifier reads for one claim: all ``units`` when they are short, else those at
    ``nearest`` (the claim's most similar first), as many as fit in the short source's length
    (always the nearest one), kept in source order. Fitting matters: the verifier reads a
    bounded number of tokens, and a window cut at its end could lose the very sentence that
    supports the claim."""
    if sum(len(unit.split()) for unit in units) <= WHOLE_SOURCE_WORDS:
        return "\n".join(units)
    chosen: list[int] = []
    words = 0
    for index in dict.fromkeys(nearest):
        size = len(units[index].split())
        if chosen and words + size > WHOLE_SOURCE_WORDS:
            continue
        chosen.append(index)
        words += size
    return "\n".join(units[index] for index in sorted(chosen))


def check_entailment(
    sentence: str, judgement: Judgement, config: JudgeConfig, evidence: str = "the source"
) -> CheckResult:
    """Hard when the verifier is confident the ``evidence`` (named for the physician: "its cited
    facts f1, f2") contradicts or does not support the sentence, soft when it is unsure; the
    probabilities go into the detail."""
    odds = f"P(entailed) {judgement.entailed:.2f}, P(contradicted) {judgement.contradicted:.2f}"
    if judgement.contradicted >= config.contradicted_above:
        return _failed(sentence, f"{evidence} contradicts it ({odds})", "hard")
    if judgement.entailed <= config.unsupported_below:
        return _failed(sentence, f"{evidence} does not say this ({odds})", "hard")
    if judgement.entailed < config.weak_below:
        return _failed(sentence, f"{evidence} may not say this ({odds})", "soft")
    return CheckResult(check="entailment", passed=True, severity="hard")


def _failed(sentence: str, detail: str, severity: Severity) -> CheckResult:
    return CheckResult(
        check="entailment", passed=False, spans=[sentence.strip()], detail=detail, severity=severity
    )


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def stated_verbatim(claim: str, evidence: str) -> bool:
    """The claim's words, in order, are in the evidence: a copy is entailed by construction
    (and the verifier, which learnt that an added "not" contradicts, misreads copied
    negations)."""
    words = _normal(claim)
    return bool(words) and f" {words} " in f" {_normal(evidence)} "


def judged(
    judge: Judge, claims: Sequence[str], windows: Sequence[str], named: Sequence[str]
) -> list[CheckResult]:
    """The meaning check of each claim against its window (``named`` for the physician), the
    verifier asked once for all that are not copied from their window."""
    asked = [
        i for i, (c, w) in enumerate(zip(claims, windows, strict=True)) if not stated_verbatim(c, w)
    ]
    judgements = dict(
        zip(asked, judge.judge([(claims[i], windows[i]) for i in asked]), strict=True)
    )
    return [
        check_entailment(claim, judgements[i], judge.config, named[i])
        if i in judgements
        else CheckResult(check="entailment", passed=True, severity="hard")
        for i, claim in enumerate(claims)
    ]
