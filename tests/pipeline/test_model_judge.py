"""A language model as the claim judge: its label decides, the shipped verifier answers where the
model gives no usable verdict, and a model's "unsupported" is a hard failure of the check."""

from __future__ import annotations

import json
from collections.abc import Sequence

from launch.tiny_models import ScriptedModel, json_tokenizer
from pipeline.backends.claim_judge import JudgeConfig, Judgement
from pipeline.backends.llm import TransformersBackend
from pipeline.checking.entailment import judged
from pipeline.checking.model_judge import ModelJudge
from pipeline.checking.verify import verify_text
from tests.chat_doubles import ScriptedChat


class Fallback:
    """The verifier's stand-in: judges every pair it is asked as well supported, and keeps them."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.asked: list[tuple[str, str]] = []

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        self.asked += pairs
        return [Judgement(entailed=0.9, contradicted=0.0) for _ in pairs]


def by_claim(answers: dict[str, str]) -> ScriptedChat:
    """A chat model that answers by the claim it is shown: a verdict, or text that is no JSON.
    A retry adds its problem after the prompt, so the claim is read from the first one."""
    return ScriptedChat(
        lambda messages: next(
            answer for claim, answer in answers.items() if claim in messages[1]["content"]
        )
    )


def test_the_models_label_decides_and_the_verifier_answers_where_the_model_cannot(
    judge_config: JudgeConfig,
) -> None:
    answers = {
        "The cough began two days ago.": '{"label": "supported", "spans": []}',
        "He has HIV.": '{"label": "unsupported", "spans": ["HIV"]}',
        "She runs marathons.": "I would rather not say.",
    }
    fallback = Fallback(judge_config)
    judge = ModelJudge(by_claim(answers), fallback, concurrency=1)
    source = "Patient: I have had a cough for two days."
    checks = judged(judge, list(answers), [source] * 3, ["the source"] * 3)
    assert [(c.passed, c.severity) for c in checks] == [
        (True, "hard"),
        (False, "hard"),
        (True, "hard"),
    ]
    assert "does not say this" in (checks[1].detail or "")
    assert fallback.asked == [("She runs marathons.", source)]  # only where the model failed


def test_provenote_verify_with_a_real_decoder_marks_what_the_model_calls_unsupported(
    judge_config: JudgeConfig,
) -> None:
    """TransformersBackend decodes under the entailment schema; the scripted weights say
    "unsupported" to every claim."""
    tokenizer = json_tokenizer()
    answer = json.dumps({"label": "unsupported", "spans": []})
    backend = TransformersBackend(ScriptedModel(tokenizer, answer), tokenizer, max_new_tokens=40)
    report = verify_text(
        "Doctor: Any chest pain? Patient: No, just a cough.",
        "The patient reports a cough.",
        encoder=None,
        judge=ModelJudge(backend, Fallback(judge_config), concurrency=1),
    )
    (sentence,) = report.sentences
    assert sentence.verdict == "unsupported"
    assert any(c.check == "entailment" and not c.passed for c in sentence.checks)
