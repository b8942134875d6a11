"""A scripted OpenAI-compatible chat server: the sandbox's stand-in for a model server.

It answers Provenote's prompts by their task, deterministically, so that the app's model path
(extraction, draft, entailment, fix) can be exercised and timed without a model: the draft copies
the note sentences it was given (its first facts where there are none), each citing its own id,
plus (``invent``) one sentence with a number the evidence does not hold, which entailment then
judges unsupported and the fix deletes.
``delay_s`` is the time each answer takes (a model's latency, for the concurrency benchmark);
``fail_status`` makes every request fail with that HTTP status (an outage). It is a test double
for a real server such as vLLM (``tests/smartapp/test_vllm.py`` runs against the real one), in
the same way the sandbox EHR stands in for a hospital's.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INVENTED = "Aspirin 999 mg was given every hour."


@dataclass
class ModelScript:
    """How the server behaves, and what it was asked (for the tests to read)."""

    delay_s: float = 0.0
    invent: bool = True
    fail_status: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def task_of(body: dict[str, Any]) -> str:
    """The task the prompt names (the first user message; a retry appends to the chat)."""
    found = re.search(r"TASK: (\w+)", body["messages"][1]["content"])
    return found.group(1) if found else "unknown"


def _data_lines(prompt: str, after: str) -> list[tuple[str, str]]:
    """``id: text`` lines of the first <data> block after ``after``."""
    block = prompt.split(after, 1)[1].split("<data>", 1)[1].split("</data>", 1)[0]
    lines = [line.split(": ", 1) for line in block.splitlines() if ": " in line]
    return [(found[0].strip(), found[1].strip()) for found in lines]


def answer_for(body: dict[str, Any], script: ModelScript) -> dict[str, Any]:
    prompt = body["messages"][1]["content"]
    task = task_of(body)
    if task == "extract":
        return {"items": []}
    if task == "draft":
        notes = _data_lines(prompt, "Note sentences")
        facts = _data_lines(prompt, "Facts")
        # The note sentences, or where the stay's notes gave none, its first three statements
        # (a statement stands for several facts: it cites every id listed with it).
        by_text: dict[str, list[str]] = {}
        for fact_id, text in notes or facts:
            by_text.setdefault(text, []).append(fact_id)
        copied = list(by_text.items()) if notes else list(by_text.items())[:3]
        sentences = [{"text": text, "citations": ids} for text, ids in copied]
        if script.invent and (notes or facts):
            sentences.append({"text": INVENTED, "citations": [(notes or facts)[0][0]]})
        return {"sentences": sentences}
    if task == "entailment":
        sentence = prompt.split("Sentence:\n<data>", 1)[1].split("</data>", 1)[0]
        invented = "999" in sentence
        return {"label": "unsupported" if invented else "supported", "spans": ["999 mg"] * invented}
    if task == "fix":
        return {"sentences": []}
    return {}


class _Handler(BaseHTTPRequestHandler):
    script: ModelScript

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        script = self.script
        with script.lock:
            script.requests.append(body)
            script.in_flight += 1
            script.most_in_flight = max(script.most_in_flight, script.in_flight)
        try:
            time.sleep(script.delay_s)
            if script.fail_status is not None:
                self._send(script.fail_status, {"error": {"message": "model server down"}})
                return
            content = json.dumps(answer_for(body, script))
            prompt_words = sum(len(m["content"].split()) for m in body["messages"])
            self._send(
                200,
                {
                    "choices": [{"message": {"role": "assistant", "content": content}}],
                    "usage": {
                        "prompt_tokens": prompt_words,
                        "completion_tokens": len(content.split()),
                    },
                },
            )
        finally:
            with script.lock:
                script.in_flight -= 1

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


@contextmanager
def model_server(script: ModelScript | None = None) -> Iterator[tuple[str, ModelScript]]:
    """The server on a free loopback port: its ``/v1`` base URL and its script."""
    script = script or ModelScript()
    handler = type("ScriptedHandler", (_Handler,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()
