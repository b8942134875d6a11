"""The language-model backends: a tiny local Llama, and an OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from launch.tiny_models import tiny_llama, word_tokenizer
from pipeline.llm import TransformersBackend
from smartapp.core.openai_backend import BackendError, OpenAIBackend

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
    assert 0 < len(first.split()) <= 6


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


def test_openai_backend_asks_for_json_and_retries_429(openai_server: str) -> None:
    _Script.answers = [
        (429, {"error": "slow down"}, {"retry-after": "0"}),
        (200, completion('{"label": "supported"}'), {}),
    ]
    backend = OpenAIBackend(openai_server, "local-model", backoff_s=0.01)
    assert backend.complete(MESSAGES) == '{"label": "supported"}'
    assert len(_Script.bodies) == 2
    assert _Script.bodies[-1]["response_format"] == {"type": "json_object"}
    assert _Script.bodies[-1]["temperature"] == 0 and _Script.bodies[-1]["model"] == "local-model"


def test_openai_backend_drops_response_format_when_the_server_refuses_it(
    openai_server: str,
) -> None:
    _Script.answers = [
        (400, {"error": {"message": "response_format is not supported"}}, {}),
        (200, completion("{}"), {}),
    ]
    backend = OpenAIBackend(openai_server, "m", backoff_s=0.01)
    assert backend.complete(MESSAGES) == "{}"
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
    from pipeline.agentic import LoopSettings, agentic_summary
    from pipeline.extraction import with_model_extraction
    from smartapp.jobs.evidence import evidence_from_fhir
    from tests import fhir_fixtures as fx

    note = (
        "# Hospital Course\nAdmitted with chest pain. Troponin elevated. Treated with aspirin.\n"
        "# Plan\nFollow up with cardiology in two weeks.\n"
    )
    tokenizer = word_tokenizer(note + " system user assistant")
    backend = TransformersBackend(tiny_llama(len(tokenizer)), tokenizer, grounding_layers=[1])
    state = with_model_extraction(
        evidence_from_fhir(fx.stay(fx.document_reference("d1", fx.attachment(note)))), backend
    )
    assert any(e.agent == "extract" for e in state.trace)
    summary = agentic_summary(
        state,
        backend,
        settings=LoopSettings(ratio=1.0, max_iterations=2, top_k=1),
        grounding=backend.grounding,
        salience=lambda text: ([], []),
    )
    assert summary.stop_reason in {"no_flags", "grounding_converged", "no_new_flags", "budget"}
    assert 1 <= summary.iterations <= 2 and summary.decisions
    course = summary.section("hospital_course").sentences
    known = {fact.id for fact in state.all_facts()}
    for sentence in course:
        assert sentence.entailment in {"supported", "unsupported"}
        assert sentence.grounding is None or 0 <= sentence.grounding <= 1
        assert set(sentence.citations) <= known
    Bundle.model_validate(draft_bundle(summary, state, datetime(2026, 11, 30, tzinfo=UTC)))
    assert summary.backend == "transformers"
