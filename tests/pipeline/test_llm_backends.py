"""The language-model backends: a tiny local Llama, and an OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest

from launch.tiny_models import (
    TINY_ANSWER_LIMITS,
    ScriptedModel,
    json_tokenizer,
    tiny_llama,
    word_tokenizer,
)
from pipeline.backends.answer_schemas import entailment_schema, extraction_schema, sentences_schema
from pipeline.backends.chat import Completion, Metered
from pipeline.backends.llm import TransformersBackend
from pipeline.settings import PipelineSettings, SchemaLimits
from smartapp.core.openai_backend import BackendError, OpenAIBackend
from tests.chat_doubles import ScriptedChat

MESSAGES = [
    {"role": "system", "content": "answer with json"},
    {"role": "user", "content": "summarize the patient was admitted with chest pain"},
]


def test_tiny_llama_backend_decodes_greedily_and_deterministically() -> None:
    tokenizer = word_tokenizer("system user assistant : answer with json")
    backend = TransformersBackend(tiny_llama(len(tokenizer)), tokenizer, max_new_tokens=6)
    prompt = backend.chat_text(MESSAGES)
    assert prompt.startswith("system: answer with json\nuser: summarize") and prompt.endswith(
        "assistant:"
    )
    first = backend.complete(MESSAGES)
    assert first == backend.complete(MESSAGES)
    assert 0 < len(first.text.split()) <= 6
    assert len(first.text.split()) <= first.completion_tokens <= 6  # special tokens are not text
    assert first.prompt_tokens == len(tokenizer(prompt)["input_ids"])


DRAFTS = [
    {
        "sentences": [
            {
                "text": "Admitted with chest pain; troponin was elevated and an echo showed "
                "an ejection fraction of 35 percent.",
                "citations": ["f1", "f2"],
            },
            {"text": "Aspirin given.", "citations": []},
            {"text": "Discharged home stable.", "citations": ["f2"]},
        ]
    },
    {"sentences": [{"text": "Stable.", "citations": ["f1"]}]},
    {"sentences": []},
]


@pytest.mark.parametrize("answer", DRAFTS, ids=["three-sentences", "one-word", "none"])
def test_constrained_decoding_lets_the_model_end_strings_and_arrays_where_it_chooses(
    answer: dict,
) -> None:
    """A scripted model spells an answer; the grammar lets every string and array end where
    the model ends it, whatever its length within the schema's (production) bounds."""
    tokenizer = json_tokenizer()
    backend = TransformersBackend(ScriptedModel(tokenizer, json.dumps(answer)), tokenizer)
    completion = backend.complete(MESSAGES, sentences_schema(SchemaLimits(), ["f1", "f2"]))
    assert json.loads(completion.text) == answer
    assert completion.completion_tokens == len(
        tokenizer(json.dumps(answer), add_special_tokens=False)["input_ids"]
    )


def test_constrained_decoding_keeps_a_model_inside_the_schema() -> None:
    """The model would cite an id that does not exist: the grammar forbids it, and the answer
    cites one that does."""
    tokenizer = json_tokenizer()
    wanted = '{"sentences": [{"text": "Stable.", "citations": ["f9"]}]}'
    backend = TransformersBackend(ScriptedModel(tokenizer, wanted), tokenizer, max_new_tokens=60)
    text = backend.complete(MESSAGES, sentences_schema(TINY_ANSWER_LIMITS, ["f1", "f2"])).text
    assert text.startswith('{"sentences": [{"text": "Stable.", "citations": ["f')
    assert '"f9"' not in text


@pytest.mark.parametrize(
    "schema",
    [
        sentences_schema(TINY_ANSWER_LIMITS, ["f1", "f2"]),
        entailment_schema(TINY_ANSWER_LIMITS),
        extraction_schema(TINY_ANSWER_LIMITS),
    ],
    ids=["sentences", "entailment", "extraction"],
)
def test_a_tiny_random_llama_answers_json_that_matches_each_schema(schema: dict) -> None:
    tokenizer = json_tokenizer()
    backend = TransformersBackend(tiny_llama(len(tokenizer)), tokenizer, max_new_tokens=400)
    completion = backend.complete(MESSAGES, schema)
    answer = json.loads(completion.text, strict=False)
    jsonschema.validate(answer, schema)
    assert completion.completion_tokens < 400  # the grammar ended it, not the token budget


def test_metered_counts_one_drafts_calls_and_tokens() -> None:
    metered = Metered(
        ScriptedChat(lambda messages: Completion("{}", prompt_tokens=10, completion_tokens=2))
    )
    for _ in range(3):
        metered.complete(MESSAGES)
    assert metered.usage.model_dump() == {
        "calls": 3,
        "prompt_tokens": 30,
        "completion_tokens": 6,
        "wasted_tokens": 0,
    }
    plain = Metered(ScriptedChat(lambda messages: "{}"))
    assert plain.complete(MESSAGES).text == "{}" and plain.usage.calls == 1


def test_tiny_llama_backend_scores_grounding_per_sentence() -> None:
    context = "summarize : the patient was admitted with chest pain ."
    tokenizer = word_tokenizer(context + " user :")
    backend = TransformersBackend(tiny_llama(len(tokenizer)), tokenizer, grounding_layers=[0, 1])
    summary = "the patient was admitted . chest pain ."
    spans = [(0, 25), (26, len(summary))]
    scores = backend.grounding(context, [(12, len(context))], summary, spans)
    assert len(scores) == 2 and all(score is not None and 0 <= score <= 1 for score in scores)


class _Script:
    """What the local server answers next, and what it was sent (reset by the fixture)."""

    answers: ClassVar[list[tuple[int, dict | str, dict[str, str]]]] = []
    bodies: ClassVar[list[dict]] = []
    responder: ClassVar[list] = []  # when set, answers every request from its body


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        _Script.bodies.append(json.loads(self.rfile.read(length)))
        if _Script.responder:
            status, body, headers = _Script.responder[0](_Script.bodies[-1])
        else:
            status, body, headers = _Script.answers.pop(0)
        payload = body if isinstance(body, str) else json.dumps(body)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def openai_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Script.answers.clear()
    _Script.bodies.clear()
    _Script.responder.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def completion(content: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": content}}]}


SCHEMA = {"type": "object", "properties": {"label": {"enum": ["supported"]}}}


def test_openai_backend_asks_for_the_schema_strictly_and_retries_429(openai_server: str) -> None:
    _Script.answers = [
        (429, {"error": "slow down"}, {"retry-after": "0"}),
        (200, completion('{"label": "supported"}') | {"usage": {"prompt_tokens": 7}}, {}),
    ]
    backend = OpenAIBackend(openai_server, "local-model", backoff_s=0.01, max_tokens=512)
    answer = backend.complete(MESSAGES, SCHEMA)
    assert answer == Completion('{"label": "supported"}', prompt_tokens=7)
    assert len(_Script.bodies) == 2
    assert _Script.bodies[-1]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": True, "schema": SCHEMA},
    }
    body = _Script.bodies[-1]
    assert (body["temperature"], body["model"], body["max_tokens"]) == (0, "local-model", 512)
    assert backend.response_format == "json_schema"


@pytest.mark.parametrize(
    ("retry_after", "waited"),
    [("3600", 30.0), ("Wed, 01 Jan 2020 00:00:00 GMT", 0.0), ("soon", 0.01)],
)
def test_openai_backend_waits_as_asked_but_never_past_the_cap(
    openai_server: str, monkeypatch: pytest.MonkeyPatch, retry_after: str, waited: float
) -> None:
    """Retry-After is read as every server's is (seconds or an HTTP date); an hour's wait asked
    is 30 s, a date past is none, and an unreadable one is our own backoff."""
    slept: list[float] = []
    monkeypatch.setattr("smartapp.core.openai_backend.time.sleep", slept.append)
    _Script.answers = [
        (429, {"error": "slow down"}, {"retry-after": retry_after}),
        (200, completion('{"label": "supported"}'), {}),
    ]
    backend = OpenAIBackend(openai_server, "m", backoff_s=0.01, response_format="json_schema")
    assert backend.complete(MESSAGES, SCHEMA).text == '{"label": "supported"}'
    assert slept == [waited]


@pytest.mark.parametrize(
    ("refused", "taken"),
    [(["json_schema"], "json_object"), (["json_schema", "json_object"], "text")],
)
def test_openai_backend_falls_back_to_what_the_server_takes_and_detects_it_once(
    openai_server: str, refused: list[str], taken: str
) -> None:
    def answer(body: dict) -> tuple[int, dict, dict]:
        kind = body.get("response_format", {}).get("type", "text")
        if kind in refused:
            return 400, {"error": {"message": f"response_format {kind} is not supported"}}, {}
        return 200, completion('{"label": "supported"}'), {}

    _Script.responder.append(answer)
    backend = OpenAIBackend(openai_server, "m", backoff_s=0.01)
    for _ in range(3):
        assert backend.complete(MESSAGES, SCHEMA).text == '{"label": "supported"}'
    asked = [body.get("response_format", {}).get("type", "text") for body in _Script.bodies]
    # Detection costs one refused request per refused format, on the first call only.
    assert asked == [*refused, taken, taken, taken]
    assert backend.response_format == taken


def test_openai_backend_sends_no_response_format_for_free_text(openai_server: str) -> None:
    _Script.answers = [(200, completion("plain words"), {})]
    assert OpenAIBackend(openai_server, "m").complete(MESSAGES).text == "plain words"
    assert "response_format" not in _Script.bodies[-1]


def test_openai_backend_reports_malformed_answers_and_timeouts(openai_server: str) -> None:
    _Script.answers = [(200, "this is not json", {})]
    with pytest.raises(BackendError, match="malformed answer"):
        OpenAIBackend(openai_server, "m").complete(MESSAGES)
    backend = OpenAIBackend(
        "http://127.0.0.1:1/v1", "m", max_retries=1, backoff_s=0.01, timeout_s=0.5
    )
    with pytest.raises(BackendError, match="no answer"):
        backend.complete(MESSAGES)


def test_summarize_cli_drafts_the_hospital_course_with_an_openai_compatible_model(
    openai_server: str, tmp_path
) -> None:
    import re
    import subprocess
    import sys
    from pathlib import Path

    def answer(body: dict) -> tuple[int, dict, dict]:
        prompt = body["messages"][1]["content"]
        task = re.search(r"TASK: (\w+)", prompt).group(1)
        if task == "extract":
            return 200, completion(json.dumps({"items": []})), {}
        if task == "draft":
            notes = prompt.split("Note sentences", 1)[1].split("<data>", 1)[1]
            first = next(line for line in notes.splitlines() if ": " in line)
            fact_id, text = first.split(": ", 1)
            reply = {"sentences": [{"text": text, "citations": [fact_id]}]}
        else:
            reply = {"label": "supported", "spans": []}
        return 200, completion(json.dumps(reply)), {}

    _Script.responder.append(answer)
    output = tmp_path / "draft.json"
    script = Path(sys.executable).with_name("provenote")
    completed = subprocess.run(
        [
            str(script),
            "summarize",
            "--llm",
            f"openai:{openai_server}#local-model",
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-1500:]
    bundle = json.loads(output.read_text())
    device = bundle["entry"][0]["resource"]
    assert device["deviceName"][0]["name"] == "openai:local-model"
    composition = bundle["entry"][1]["resource"]
    course = next(s for s in composition["section"] if s["id"] == "section-hospital-course")
    parts = {p["url"] for p in course["extension"][0]["extension"]}
    assert "entailment" in parts
    tasks = [
        re.search(r"TASK: (\w+)", b["messages"][1]["content"]).group(1) for b in _Script.bodies
    ]
    assert tasks[0] == "extract" and "draft" in tasks and "entailment" in tasks


def test_the_whole_loop_runs_on_a_tiny_llama_with_schema_constrained_json() -> None:
    from datetime import UTC, datetime

    from fhir.resources.R4B.bundle import Bundle

    from fhir_mapping.composition import draft_bundle
    from fhir_mapping.json_values import as_json
    from pipeline.summarizing.agentic import LoopSettings, draft_with_model
    from smartapp.jobs.evidence import evidence_from_fhir
    from tests import fhir_fixtures as fx

    note = (
        "# Hospital Course\nAdmitted with chest pain. Troponin elevated. Treated with aspirin.\n"
        "# Plan\nFollow up with cardiology in two weeks.\n"
    )
    tokenizer = json_tokenizer(note)
    backend = TransformersBackend(
        tiny_llama(len(tokenizer), max_positions=8192),
        tokenizer,
        grounding_layers=[1],
        max_new_tokens=400,
    )
    state, summary = draft_with_model(
        evidence_from_fhir(
            fx.stay(fx.document_reference("d1", fx.attachment(note))), settings=PipelineSettings()
        ),
        backend,
        settings=LoopSettings(ratio=1.0, max_iterations=2, top_k=1, limits=TINY_ANSWER_LIMITS),
        grounding=backend.grounding,
        salience=lambda text: ([], []),
    )
    assert any(e.agent == "extract" for e in state.trace)
    course = summary.section("hospital_course").sentences
    # Extraction and the draft at least; each sentence a random model writes that survives
    # (many are fragments, dropped before any check) is judged too.
    assert summary.model_usage is not None
    assert summary.model_usage.calls >= 2 + (1 if course else 0)
    assert summary.stop_reason in {"no_flags", "grounding_converged", "no_new_flags", "budget"}
    assert 1 <= summary.iterations <= 2 and summary.decisions
    known = {fact.id for fact in state.all_facts()}
    for sentence in course:
        assert sentence.entailment in {"supported", "unsupported"}
        assert sentence.grounding is None or 0 <= sentence.grounding <= 1
        assert set(sentence.citations) <= known
    Bundle.model_validate(as_json(draft_bundle(summary, state, datetime(2026, 11, 30, tzinfo=UTC))))
    assert summary.backend == "transformers"


def test_a_local_model_is_named_by_its_directory_and_weights_never_by_its_path(
    tmp_path: Path,
) -> None:
    tokenizer = word_tokenizer()
    directory = tmp_path / "server-secret-cache" / "my-model"
    tiny_llama(len(tokenizer)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    backend = TransformersBackend.from_directory(directory)
    assert backend.name == "transformers:my-model"
    assert backend.version.startswith("sha256:") and "server-secret-cache" not in backend.version
    assert TransformersBackend.from_directory(directory).version == backend.version
    in_code = TransformersBackend(tiny_llama(len(tokenizer)), tokenizer)
    assert "/" not in in_code.version
