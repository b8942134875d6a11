"""The summarizing stage: which drafter writes a job's summary, and what happens when the model
cannot be used.

With a model configured, extraction and the agentic loop run together in a thread (never half
of a model's work is kept); when the model fails, the job either drafts from the evidence alone
(the draft says so: ``model_unavailable``) or fails, as the deployment chose. Without a model,
the evidence-only summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fhir_mapping.composition import MODEL_UNAVAILABLE, draft_bundle
from fhir_mapping.json_values import as_json
from pipeline.errors import ModelError, ProvenoteError
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.summary_text import render_markdown
from smartapp.core.errors import log, new_error_id
from smartapp.core.language_models import LanguageModel
from smartapp.core.tables import DraftRow, JobRow
from smartapp.drafts.service import DraftService
from smartapp.drafts.store import NewDraft, job_actor

# Told what the drafter is doing now, for the job's progress.
Report = Callable[[str], Coroutine[Any, Any, Any]]


@dataclass(frozen=True, slots=True)
class Drafting:
    """The deployment's drafting: its pipeline settings, its model (None: evidence-only),
    loaded once per process, and what a job does when that model cannot be used."""

    settings: PipelineSettings
    language_model: LanguageModel | None = None
    model_fallback: str = "evidence-only"

    async def summarize(
        self, job_id: str, state: EvidenceState, report: Report
    ) -> tuple[Summary, EvidenceState, str | None]:
        """The summary and the state it cites, with the model when one is configured; when the
        model cannot be used, the evidence-only summary and why (or the job fails, if so set)."""
        model = self.language_model
        unavailable = None
        if model is not None:
            loop = asyncio.get_running_loop()

            def progress(step: str) -> None:
                asyncio.run_coroutine_threadsafe(report(step), loop).result()

            try:
                extended, summary = await asyncio.to_thread(
                    model.draft, state, self.settings, progress
                )
                return summary, extended, None
            except ModelError as failure:
                error_id = new_error_id()
                # The server's words may quote the prompt (patient data): they go to the log only.
                log.warning(
                    "job %s: model %s failed (error %s): %s",
                    job_id,
                    model.backend.name,
                    error_id,
                    failure,
                )
                if self.model_fallback == "fail":
                    raise ProvenoteError(
                        f"the language model {model.backend.name} could not be used "
                        f"(error {error_id}); no draft was made"
                    ) from failure
                unavailable = f"{model.backend.name}: {type(failure).__name__} (error {error_id})"
                await report(f"{MODEL_UNAVAILABLE}: drafting from the evidence")
        summary = await asyncio.to_thread(
            summarize_evidence, state, ratio=self.settings.focus_ratio, settings=self.settings
        )
        return summary.model_copy(update={"model_unavailable": unavailable}), state, unavailable

    async def store(
        self, job: JobRow, state: EvidenceState, drafts: DraftService, report: Report
    ) -> DraftRow:
        """The job's draft, stored: its summary (by the model where one is configured), the
        Composition's bundle and the text, and an audit event when the model could not be
        used."""
        summary, state, unavailable = await self.summarize(job.id, state, report)
        draft = await drafts.create(
            NewDraft(
                job_id=job.id,
                iss=job.iss,
                patient=job.patient,
                summary=summary,
                state=state,
                bundle=as_json(draft_bundle(summary, state, datetime.now(UTC))),
                markdown=render_markdown(summary, state),
            )
        )
        if unavailable is not None:
            await drafts.audit(job_actor(job.id), MODEL_UNAVAILABLE, draft.id, unavailable)
        return draft
