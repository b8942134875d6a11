"""The launched app drafts with a model when one is configured: extraction and the agentic loop
in the worker, step by step on the progress stream, recorded on the draft, shown on the review
page; and when the model fails, the evidence-only draft, marked, or a failed job if so set.

The model here is the scripted OpenAI-compatible server of the sandbox (a test double);
``tests/smartapp/test_vllm.py`` runs the same path against a real vLLM server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from fhir_mapping.composition import DRAFTING_NOTE, MODEL_UNAVAILABLE
from launch.sandbox.model_server import INVENTED, ModelScript, model_server
from launch.sandbox.run import Sandbox
from pipeline.checking.review import review_items
from pipeline.evidence.summary import CheckResult, Sentence
from pipeline.text.rendering import render
from smartapp.jobs.service import StageHook
from tests.smart_support import RunningApp, app_and_browser, launch_job, wait_for

PATIENT = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"


async def _pause_before_summarizing(job_id: str, stage: str) -> None:
    if stage == "ingesting":
        await asyncio.sleep(1.5)  # time for the test to open the progress stream


@contextmanager
def drafting_with(
    script: ModelScript,
    sandbox: Sandbox,
    data_dir: Path,
    stage_hook: StageHook | None = None,
    **overrides: object,
) -> Iterator[tuple[RunningApp, httpx.Client]]:
    """The sandbox's model server answering as ``script`` says, the app drafting with it (its
    settings changed by ``overrides``), and a browser."""
    with (
        model_server(script) as (url, _),
        app_and_browser(
            sandbox, data_dir, stage_hook, summarizer=f"openai:{url}#sandbox-model", **overrides
        ) as (app, browser),
    ):
        yield app, browser


def _draft(browser: httpx.Client, app: RunningApp, job: dict) -> dict:
    """The draft as the API serves it, with the summary it was rendered from."""
    draft = browser.get(f"{app.base_url}/api/drafts/{job['draft']}").json()
    stored = app.call(app.state.drafts.load(job["draft"]))
    return draft | {"summary": stored.summary}


def _device(draft: dict) -> dict:
    return next(
        entry["resource"]
        for entry in draft["bundle"]["entry"]
        if entry["resource"]["resourceType"] == "Device"
    )


def test_a_launch_with_a_model_drafts_checks_and_repairs_the_hospital_course(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = ModelScript(delay_s=0.05)
    with drafting_with(
        script,
        sandbox,
        tmp_path,
        _pause_before_summarizing,
        client_id="app-model",
        model_concurrency=3,
    ) as (app, browser):
        job_id = launch_job(browser, sandbox, PATIENT)
        with browser.stream("GET", f"{app.base_url}/jobs/{job_id}/events") as events:
            details = [
                json.loads(line[5:])["detail"]
                for line in events.iter_lines()
                if line.startswith("data:")
            ]
        job = wait_for(browser, app, job_id)
        assert job["state"] == "done", job
        steps = " | ".join(details)
        assert "extracting note 1 of" in steps and "drafting the hospital course" in steps
        assert "pass 1: detecting" in steps and "pass 1: fixing 1 sentences" in steps
        order = [
            steps.index(step) for step in ("extracting note", "drafting the hospital", "pass 1")
        ]
        assert order == sorted(order)

        draft = _draft(browser, app, job)
        course = next(
            section
            for section in draft["summary"]["sections"]
            if section["key"] == "hospital_course"
        )
        texts = [sentence["text"] for sentence in course["sentences"]]
        assert texts and INVENTED not in texts  # flagged by entailment and the checker, fixed
        assert all(sentence["entailment"] == "supported" for sentence in course["sentences"])
        assert draft["summary"]["backend"] == "openai:sandbox-model"
        assert draft["summary"]["stop_reason"] == "no_flags"
        assert draft["summary"]["iterations"] == 2

        usage = draft["summary"]["model_usage"]
        assert usage["calls"] == len(script.requests)
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        properties = {prop["type"]["text"]: prop for prop in _device(draft).get("property", [])}
        assert properties["model-calls"]["valueQuantity"][0]["value"] == usage["calls"]
        assert properties["passes"]["valueQuantity"][0]["value"] == 2
        assert properties["stop-reason"]["valueCode"][0]["text"] == "no_flags"
        assert _device(draft)["deviceName"][0]["name"] == "openai:sandbox-model"

        # Independent sentences were judged concurrently, within the limit.
        assert 1 < script.most_in_flight <= 3
        # The server was asked for strict structured output (it takes it).
        formats = {body["response_format"]["type"] for body in script.requests}
        assert formats == {"json_schema"}

        page = browser.get(f"{app.base_url}/drafts/{draft['id']}").text
        assert "entailment: supported" in page
        assert 'id="model-usage"' in page and "stopped: no_flags" in page


def test_a_model_outage_delivers_the_evidence_only_draft_marked_and_audited(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = ModelScript(fail_status=503)
    with drafting_with(
        script, sandbox, tmp_path, client_id="app-model-down", model_max_retries=1
    ) as (app, browser):
        job = wait_for(browser, app, launch_job(browser, sandbox, PATIENT))
        assert job["state"] == "done", job
        assert script.requests  # the model was tried (and retried) first
        draft = _draft(browser, app, job)
        summary = draft["summary"]
        assert summary["backend"] == "provenote-evidence-only"
        assert summary["model_unavailable"].startswith("openai:sandbox-model: BackendError")
        assert "model server down" not in summary["model_unavailable"]  # its words stay in logs
        composition = next(
            e["resource"]
            for e in draft["bundle"]["entry"]
            if e["resource"]["resourceType"] == "Composition"
        )
        assert composition["title"].endswith(f"({MODEL_UNAVAILABLE})")
        assert composition["extension"][0]["url"] == DRAFTING_NOTE
        assert "Model unavailable: evidence-only draft" in draft["markdown"]
        # Never half a model's draft: nothing the model said is in it.
        assert all(
            sentence.get("entailment") is None
            for section in summary["sections"]
            for sentence in section["sentences"]
        )
        audit = app.call(app.state.drafts.audit_trail(draft["id"]))
        assert any(event.action == MODEL_UNAVAILABLE for event in audit)
        page = browser.get(f"{app.base_url}/drafts/{draft['id']}").text
        assert 'id="model-unavailable"' in page


def test_a_model_outage_fails_the_job_when_fallback_is_off(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    script = ModelScript(fail_status=500)
    settings = {"client_id": "app-model-strict", "model_max_retries": 0, "model_fallback": "fail"}
    with drafting_with(script, sandbox, tmp_path, **settings) as (app, browser):
        job = wait_for(browser, app, launch_job(browser, sandbox, PATIENT))
        assert job["state"] == "failed"
        assert "language model openai:sandbox-model could not be used" in job["error"]
        assert job["draft"] is None


def test_the_review_page_shows_the_models_verdicts_beside_the_checkers() -> None:
    soft = CheckResult(check="terms", passed=False, spans=["prescribed"], detail="words")
    sentence = Sentence(
        id="s1",
        section="hospital_course",
        text="The patient was prescribed atenolol.",
        citations=["f1"],
        grounding=0.42,
        entailment="unsupported",
        checks=[soft],
    )
    page = render(
        "app/_sentence.html.j2",
        sentence=sentence,
        review_items=review_items,
        citations={"s1": []},
        editable=False,
        may_review=False,
        draft=None,
    )
    assert "checker: supported, weak grounding" in page
    assert "entailment: unsupported" in page
    assert 'data-grounding="0.42"' in page and "grounding (AURA): 0.42" in page
