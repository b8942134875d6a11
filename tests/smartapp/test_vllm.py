"""The launched-app path against a real OpenAI-compatible server: vLLM's CPU build serving the real
SmolLM2-135M-Instruct (the packaged GGUF, converted once into safetensors, which vLLM loads as
any Llama), its structured-output decoding on.

vLLM is not a dependency of Provenote: it needs its own environment, which ``launch/vllm_env.sh``
builds and ``launch/test.sh`` passes here as ``PROVENOTE_VLLM_PYTHON``; without it (a bare
``pytest``) these tests skip, except in CI. The other tests use the sandbox's scripted server.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from launch.sandbox.run import Sandbox
from launch.sandbox.servers import free_port
from smartapp.core.packaged_model import converted_directory, packaged_smollm2
from tests.smart_support import launch_job, running_app, wait_for

VLLM_PYTHON = os.environ.get("PROVENOTE_VLLM_PYTHON")
PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM_PYTHON and not os.environ.get("CI"),
        reason="PROVENOTE_VLLM_PYTHON names no vLLM environment (launch/vllm_env.sh builds one)",
    ),
]


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = converted_directory(packaged_smollm2(), tmp_path_factory.mktemp("models"))
    port = free_port()
    log = (tmp_path_factory.mktemp("vllm") / "server.log").open("w")
    server = subprocess.Popen(
        [
            str(VLLM_PYTHON),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(model),
            "--served-model-name",
            "smollm2",
            "--dtype",
            "float32",
            "--max-model-len",
            "8192",
            "--port",
            str(port),
            # JSON without free whitespace: a small model would otherwise fill its budget with it.
            "--structured-outputs-config",
            '{"backend": "xgrammar", "disable_any_whitespace": true}',
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ | {"VLLM_CPU_KVCACHE_SPACE": "1"},
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert server.poll() is None, f"vLLM exited; see {log.name}"
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def test_the_launched_app_drafts_with_a_real_model_on_a_real_vllm_server(
    vllm_server: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    with (
        running_app(
            sandbox,
            tmp_path,
            client_id="app-vllm",
            summarizer=f"openai:{vllm_server}#smollm2",
            max_iterations=2,
            model_max_tokens=1024,
            model_timeout_s=300,
            model_fallback="fail",  # a model failure must fail this test, not fall back
        ) as app,
        httpx.Client(follow_redirects=True, timeout=120) as browser,
    ):
        job = wait_for(browser, app, launch_job(browser, sandbox, PATIENT), timeout_s=600)
        assert job["state"] == "done", job
        backend = app.state.jobs.drafting.language_model.backend
        assert backend.response_format == "json_schema"  # vLLM enforces the schema itself
        stored = app.call(app.state.drafts.load(job["draft"]))
        summary, state = stored.summary, stored.evidence
        assert summary["backend"] == "openai:smollm2"  # the draft names the model
        usage = summary["model_usage"]
        assert usage["calls"] >= 2 and usage["completion_tokens"] > 0
        assert summary["stop_reason"] in {
            "no_flags",
            "grounding_converged",
            "no_new_flags",
            "budget",
        }
        # Extraction: what was kept quotes its note exactly; what was not has its reason.
        pages = {
            (document["id"], page["number"]): page["text"]
            for document in state["documents"]
            for page in document["pages"]
        }
        extracted = [
            fact
            for facts in state["facts"].values()
            for fact in facts
            if fact["id"].startswith("extracted")
        ]
        for fact in extracted:
            for ref in fact["sources"]:
                if ref.get("quote") is not None:
                    page = pages[(ref["document"], ref["page"])]
                    assert page[ref["start"] : ref["end"]] == ref["quote"]
        for rejected in state["rejected_facts"]:
            assert rejected["reason"].startswith(("quote not found", "echoes the prompt"))
        # The model's course cites only facts of the evidence, and says something about them.
        known = {fact["id"] for facts in state["facts"].values() for fact in facts}
        course = next(s for s in summary["sections"] if s["key"] == "hospital_course")
        for sentence in course["sentences"]:
            assert sentence["entailment"] in {"supported", "unsupported"}
            assert set(sentence["citations"]) <= known
        draft = browser.get(f"{app.base_url}/api/drafts/{job['draft']}").json()
        assert draft["write_back"]["status"] == "done"
        page = browser.get(f"{app.base_url}/drafts/{job['draft']}")
        assert page.status_code == 200 and 'id="model-usage"' in page.text
