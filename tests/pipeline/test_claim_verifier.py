"""The claim verifier: a cross-encoder over the packaged all-MiniLM-L6-v2 whose trained part
ships small and loads offline, and which reads meaning where the word checks read words.

The dialogues and claims here were written for these tests; none is in the training pairs or
the validation sets."""

from __future__ import annotations

import pytest
import torch

from pipeline.backends.claim_judge import (
    ClaimJudge,
    JudgeConfig,
    Judgement,
    base_model,
    base_path,
    default_judge,
    encode_pairs,
    shipped_weights,
)
from pipeline.backends.lora import adapter_state, merge_adapters
from pipeline.checking.entailment import check_entailment, evidence_window
from pipeline.checking.verify import verify_text
from pipeline.evidence.summary import CheckResult

DIALOGUE = (
    "Doctor: What brings you in today?\n"
    "Patient: I've had a dry cough for about three weeks.\n"
    "Doctor: Any fever or chest pain?\n"
    "Patient: No, nothing like that.\n"
    "Doctor: Do you smoke?\n"
    "Patient: I quit ten years ago.\n"
    "Doctor: Does anyone in your family have lung problems?\n"
    "Patient: My father had emphysema.\n"
)
# What the dialogue says, in a summary's words; and what nobody in it said.
SAID = [
    "The patient has had a dry cough for three weeks.",
    "He denies fever and chest pain.",
    "The patient quit smoking ten years ago.",
]
NEVER_SAID = [
    "The patient was admitted to the hospital for pneumonia.",
    "The patient was started on inhaled steroids last month.",
    "She underwent a bronchoscopy that showed a tumour.",
]


def test_an_untrained_adapter_leaves_the_packaged_encoder_unchanged(
    judge_config: JudgeConfig,
) -> None:
    from transformers import AutoModel

    tokenizer, model = base_model(judge_config)
    packaged = AutoModel.from_pretrained(str(base_path()), local_files_only=True).eval()
    inputs = encode_pairs(tokenizer, [("a dry cough", DIALOGUE)], judge_config.max_length)
    with torch.no_grad():
        adapted = model.eval().encoder(**inputs).last_hidden_state
        plain = packaged(**inputs).last_hidden_state
    assert torch.allclose(adapted, plain, atol=1e-5)


def test_only_the_adapters_and_the_head_are_trained_and_shipped(judge_config: JudgeConfig) -> None:
    _, model = base_model(judge_config)
    trained = adapter_state(model)
    assert trained and all("lora_" in name or name.startswith("head.") for name in trained)
    total = sum(parameter.numel() for parameter in model.parameters())
    assert sum(tensor.numel() for tensor in trained.values()) < 0.05 * total


def test_folding_trained_adapters_into_their_layers_changes_no_judgement(
    judge_config: JudgeConfig,
) -> None:
    """The loaded verifier judges with each adapter folded into its layer (one product per
    layer, not three): what it answers must be what the adapters themselves answer."""
    tokenizer, model = base_model(judge_config)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_" in name:  # trained adapters: B is no longer zero
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.05)
    pairs = [("a dry cough", DIALOGUE), ("a broken leg", DIALOGUE)]
    separate = ClaimJudge(tokenizer, model, judge_config).judge(pairs)
    merge_adapters(model.encoder)
    assert not [name for name, _ in model.named_parameters() if "lora_" in name]
    folded = ClaimJudge(tokenizer, model, judge_config).judge(pairs)
    for before, after in zip(separate, folded, strict=True):
        assert abs(before.entailed - after.entailed) < 1e-4
        assert abs(before.contradicted - after.contradicted) < 1e-4


def test_the_shipped_weights_are_small_and_load_once() -> None:
    weights = shipped_weights()
    assert (weights / "adapter.safetensors").stat().st_size <= 10 * 1024 * 1024
    for card in ("MODEL_CARD.md", "DATA_CARD.md", "config.json", "training.json"):
        assert (weights / card).is_file(), card
    assert default_judge() is default_judge()


def test_the_cutoffs_make_a_confident_no_hard_and_an_unsure_one_soft(
    judge_config: JudgeConfig,
) -> None:
    contradicted = check_entailment("x", Judgement(entailed=0.1, contradicted=0.85), judge_config)
    invented = check_entailment("x", Judgement(entailed=0.05, contradicted=0.1), judge_config)
    unsure = check_entailment("x", Judgement(entailed=0.3, contradicted=0.1), judge_config)
    supported = check_entailment("x", Judgement(entailed=0.9, contradicted=0.05), judge_config)
    assert (contradicted.passed, contradicted.severity) == (False, "hard")
    assert "contradicts" in contradicted.detail
    assert (invented.passed, invented.severity) == (False, "hard")
    assert (unsure.passed, unsure.severity) == (False, "soft")
    assert supported.passed


def test_a_short_source_is_read_whole_and_a_long_one_through_the_nearest_in_order() -> None:
    short = ["Cough for three weeks.", "No fever."]
    assert evidence_window(short, [1]) == "Cough for three weeks.\nNo fever."
    long = [f"Sentence {n} says something rather long about the visit." for n in range(40)]
    assert evidence_window(long, [7, 2, 7]) == f"{long[2]}\n{long[7]}"
    huge = [" ".join(["word"] * 250), "The claim itself, short.", " ".join(["more"] * 250)]
    assert evidence_window(huge, [1, 0, 2]) == "The claim itself, short."  # nothing cut


def test_pairs_read_in_order_of_length_come_back_as_each_pair_alone_would() -> None:
    """The verifier reads pairs of like length together, a few at a time; each answer, in the
    order asked, is the one its pair gets alone (the padding of a batch changes nothing)."""
    judge = default_judge()
    first_turns = "\n".join(DIALOGUE.splitlines()[:2])
    claims = SAID + NEVER_SAID
    pairs = [(claim, DIALOGUE) for claim in claims] + [(claim, first_turns) for claim in claims]
    together = judge.judge(pairs)
    alone = [judge.judge([pair])[0] for pair in pairs]
    assert len({round(judgement.entailed, 3) for judgement in alone}) > len(pairs) // 2
    for batched, single in zip(together, alone, strict=True):
        assert abs(batched.entailed - single.entailed) < 1e-4
        assert abs(batched.contradicted - single.contradicted) < 1e-4
    assert judge.judge([]) == []


def meaning_check(claim: str) -> CheckResult:
    """The shipped verifier's check of ``claim`` against the dialogue, at its shipped cut-offs:
    what the draft's meaning check says of it."""
    judge = default_judge()
    (judgement,) = judge.judge([(claim, DIALOGUE)])
    return check_entailment(claim, judgement, judge.config)


@pytest.mark.parametrize("claim", SAID)
def test_what_the_patient_said_is_entailed(claim: str) -> None:
    assert meaning_check(claim).passed


@pytest.mark.parametrize("claim", NEVER_SAID)
def test_what_nobody_said_is_unsupported(claim: str) -> None:
    check = meaning_check(claim)
    assert not check.passed and check.severity == "hard", check.detail


def test_verify_makes_an_invention_unsupported_that_the_word_checks_only_mark_weak() -> None:
    claim = "The patient was admitted to the hospital for pneumonia."
    words_only = verify_text(DIALOGUE, claim, meaning=False).sentences[0]
    with_meaning = verify_text(DIALOGUE, claim).sentences[0]
    assert words_only.verdict == "supported" and words_only.weakly_grounded
    assert with_meaning.verdict == "unsupported"
    failed = [c for c in with_meaning.checks if not c.passed and c.check == "entailment"]
    assert failed and "does not say this" in failed[0].detail


def test_a_contradiction_the_word_checks_catch_stays_unsupported_with_the_verifier() -> None:
    """A deterministic contradiction always wins: the verifier never clears it."""
    claim = "The patient reports chest pain."
    report = verify_text(DIALOGUE, claim).sentences[0]
    assert report.verdict == "unsupported"
    assert any(c.check == "negation" and not c.passed for c in report.checks)
