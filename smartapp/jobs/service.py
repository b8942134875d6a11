"""Summarization jobs: launch → pull the record → evidence → draft → write-back, durably.

Every stage is persisted before it starts and its output when it ends (the pulled record on the
job, the draft in its table, the write-back under its idempotency key), so a job interrupted at
any point resumes from the last stored output, and running it again creates nothing twice.
Who runs a job is the queue's business (``smartapp.jobs.queue``: workers in this process, or
procrastinate's worker processes); a running job holds a lease, and a job whose lease ran out
(its process died) is queued again by whichever process sees it first. A worker never dies with
a job: any failure marks that job failed, with a message safe to show and an error id for the log.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Result, func, select, update

from fhir_mapping.composition import MODEL_UNAVAILABLE, draft_bundle
from fhir_mapping.resources import type_counts
from fhir_mapping.write_plan import Strategy
from pipeline.agentic import LoopSettings, draft_with_model
from pipeline.errors import InputError, ModelError, ProvenoteError
from pipeline.evidence import EvidenceState
from pipeline.evidence_summary import summarize_evidence
from pipeline.settings import PipelineSettings
from pipeline.summary import Summary
from pipeline.summary_text import render_markdown
from smartapp.core.db import Database, DraftRow, JobRow
from smartapp.core.errors import log, new_error_id
from smartapp.core.language_models import LanguageModel
from smartapp.core.logs import JOB_ID
from smartapp.core.metrics import JOBS_FINISHED, STAGE_SECONDS, WRITE_BACKS
from smartapp.core.statuses import (
    ACTIVE_JOB_STATES,
    JOB_MOVES,
    JobStage,
    JobState,
    WriteBackStatus,
    moved,
)
from smartapp.drafts.service import DraftService
from smartapp.drafts.writing import WRITE_BACK_WORDS, Write
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import PullBounds, pull_record
from smartapp.jobs.evidence import evidence_from_fhir
from smartapp.jobs.progress import ProgressBus
from smartapp.jobs.queue import InProcessQueue, JobQueue

StageHook = Callable[[str, str], Awaitable[None]]
ClientFactory = Callable[[JobRow], Awaitable[tuple[FhirClient, str]]]


def job_view(job: JobRow) -> dict[str, Any]:
    """What ``GET /jobs/{id}`` and the progress events say about a job."""
    return {
        "id": job.id,
        "patient": job.patient,
        "encounter": job.encounter,
        "state": job.state,
        "stage": job.stage,
        "progress": round(job.progress, 3),
        "detail": job.detail,
        "error": job.error,
        "attempts": job.attempts,
    }


def _changed_rows(result: Result[Any]) -> int:
    """Rows an UPDATE changed (an UPDATE's result is a cursor result, typed more loosely)."""
    return cast(CursorResult[Any], result).rowcount


class JobService:
    def __init__(
        self,
        database: Database,
        client_for: ClientFactory,
        *,
        queue: JobQueue | None = None,
        progress: ProgressBus | None = None,
        lease_s: float = 120.0,
        forced_strategies: dict[str, Strategy] | None = None,
        stage_hook: StageHook | None = None,
        installation: str = "",
        inpatient_classes: list[str] | None = None,
        pull_bounds: PullBounds | None = None,
        pipeline_settings: PipelineSettings | None = None,
        language_model: LanguageModel | None = None,
        model_fallback: str = "evidence-only",
    ) -> None:
        self.database = database
        self.drafts = DraftService(database)
        self.client_for = client_for
        self.queue = queue or InProcessQueue()
        self.progress = progress or ProgressBus()
        self.lease = timedelta(seconds=lease_s)
        self.forced_strategies = forced_strategies or {}
        self.stage_hook = stage_hook
        self.installation = installation
        self.inpatient_classes = set(inpatient_classes or ("IMP", "ACUTE", "NONAC"))
        self.pull_bounds = pull_bounds or PullBounds()
        # The pipeline's settings, read once at start-up by whoever builds the service.
        self.pipeline_settings = pipeline_settings or PipelineSettings()
        # The model that drafts (None: evidence-only), loaded once per process, and what a job
        # does when it cannot be used: "evidence-only" (marked on the draft) or "fail".
        self.language_model = language_model
        self.model_fallback = model_fallback
        # Which process runs a job, for operators (host:pid).
        self.worker_name = f"{socket.gethostname()}:{os.getpid()}"
        self._stage_clock: dict[str, tuple[str, float]] = {}
        # Jobs this process is running: never taken for dead by this process's own workers,
        # whose event loop a long synchronous step can hold past a short lease.
        self._running: set[str] = set()

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.progress.start()
        await self.queue.start(self)

    async def stop(self) -> None:
        """Stop where the jobs are, as a dying process would; leases then run out."""
        await self.queue.stop()
        await self.progress.stop()

    # --- submitting and watching -----------------------------------------------------------------

    async def submit(
        self,
        iss: str,
        patient: str,
        encounter: str | None,
        *,
        session_id: str = "",
        origin: str = "launch",
        api_client: str | None = None,
        may_write: bool = True,
    ) -> JobRow:
        """A new job, or the one already queued or running for this patient and encounter.

        Joining a running job, a launch that may write lends the job its session; one that may
        not (a patient's) leaves the job as it is, so it never gains a right to write."""
        async with self.database.sessions() as session, session.begin():
            existing = (
                (
                    await session.execute(
                        select(JobRow).where(
                            JobRow.patient == patient,
                            JobRow.encounter == encounter,
                            JobRow.iss == iss,
                            JobRow.state.in_(ACTIVE_JOB_STATES),
                        )
                    )
                )
                .scalars()
                .first()
            )
            if existing is not None:
                if origin == "launch" and may_write:
                    existing.session_id, existing.may_write = session_id, True
                if api_client is not None and existing.api_client is None:
                    existing.api_client = api_client
                return existing
            job = JobRow(
                id=str(uuid.uuid4()),
                session_id=session_id,
                iss=iss,
                patient=patient,
                encounter=encounter,
                state=JobState.QUEUED,
                stage=JobStage.QUEUED,
                progress=0.0,
                detail="waiting for a worker",
                attempts=0,
                origin=origin,
                api_client=api_client,
                may_write=may_write,
            )
            session.add(job)
        await self.queue.enqueue(job.id)
        return job

    async def latest_for(self, iss: str, patient: str, encounter: str | None) -> JobRow | None:
        """The newest job for a patient's stay on an EHR (a launch may share it)."""
        async with self.database.sessions() as session:
            found = await session.execute(
                select(JobRow)
                .where(JobRow.iss == iss, JobRow.patient == patient, JobRow.encounter == encounter)
                .order_by(JobRow.created_at.desc())
                .limit(1)
            )
            return found.scalar_one_or_none()

    async def running_for_client(self, api_client: str) -> int:
        """Jobs an API client has queued or running."""
        async with self.database.sessions() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(JobRow)
                .where(JobRow.api_client == api_client, JobRow.state.in_(ACTIVE_JOB_STATES))
            )
        return count or 0

    async def retry(self, job_id: str) -> JobRow | None:
        """Queue a failed job again; it continues from what it had stored."""
        async with self.database.sessions() as session, session.begin():
            job = await session.get(JobRow, job_id)
            if job is None or job.state != JobState.FAILED:
                return job
            job.state, job.error = moved(JOB_MOVES, job.state, JobState.QUEUED), None
        await self.queue.enqueue(job_id)
        return job

    async def get(self, job_id: str) -> JobRow | None:
        async with self.database.sessions() as session:
            return await session.get(JobRow, job_id)

    async def ready(self) -> bool:
        """Whether a job submitted now will be run."""
        return await self.queue.ready()

    def listen(self, job_id: str) -> asyncio.Queue[dict[str, Any]]:
        return self.progress.listen(job_id)

    def unlisten(self, job_id: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.progress.unlisten(job_id, queue)

    # --- working ---------------------------------------------------------------------------------

    async def _requeue_expired(self) -> None:
        now = datetime.now(UTC)
        async with self.database.sessions() as session, session.begin():
            await session.execute(
                update(JobRow)
                .where(
                    JobRow.state == JobState.RUNNING,
                    JobRow.lease_until < now,
                    JobRow.id.not_in(self._running),
                )
                .values(state=JobState.QUEUED, detail="resumed after an interrupted run")
            )

    async def _claim(self) -> JobRow | None:
        await self._requeue_expired()
        async with self.database.sessions() as session, session.begin():
            candidate = (
                await session.execute(
                    select(JobRow.id)
                    .where(JobRow.state == JobState.QUEUED)
                    .order_by(JobRow.created_at)
                    .limit(1)
                )
            ).scalar_one_or_none()
            if candidate is None:
                return None
            claimed = await session.execute(
                update(JobRow)
                .where(JobRow.id == candidate, JobRow.state == JobState.QUEUED)
                .values(
                    state=JobState.RUNNING,
                    attempts=JobRow.attempts + 1,
                    lease_until=datetime.now(UTC) + self.lease,
                    worker=self.worker_name,
                )
            )
            if _changed_rows(claimed) != 1:
                return None
        return await self.get(candidate)

    async def run_next(self) -> bool:
        job = await self._claim()
        if job is None:
            return False
        await self._run(job)
        return True

    async def run_by_id(self, job_id: str) -> None:
        """Run a job a queue delivered: the queue decided this worker runs it (a stalled
        worker's job included), so a running row is taken over; an ended one is left."""
        async with self.database.sessions() as session, session.begin():
            claimed = await session.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.state.in_(ACTIVE_JOB_STATES))
                .values(
                    state=JobState.RUNNING,
                    attempts=JobRow.attempts + 1,
                    lease_until=datetime.now(UTC) + self.lease,
                    worker=self.worker_name,
                )
            )
        if _changed_rows(claimed) != 1:
            return
        job = await self.get(job_id)
        assert job is not None
        await self._run(job)

    async def _update(self, job_id: str, **values: Any) -> JobRow:
        values.setdefault("lease_until", datetime.now(UTC) + self.lease)
        async with self.database.sessions() as session, session.begin():
            job = await session.get(JobRow, job_id)
            assert job is not None
            if "state" in values:
                values["state"] = moved(JOB_MOVES, job.state, JobState(values["state"]))
            for name, value in values.items():
                setattr(job, name, value)
        await self.progress.publish(job_id, job_view(job))
        return job

    def _time_stage(self, job_id: str, stage: str | None) -> None:
        """End the job's current stage on the clock (its duration observed), start ``stage``."""
        started = self._stage_clock.pop(job_id, None)
        if started is not None:
            STAGE_SECONDS.labels(started[0]).observe(time.monotonic() - started[1])
        if stage is not None:
            self._stage_clock[job_id] = (stage, time.monotonic())

    async def _stage(self, job: JobRow, stage: str, progress: float, detail: str) -> JobRow:
        self._time_stage(job.id, stage)
        job = await self._update(job.id, stage=stage, progress=progress, detail=detail)
        if self.stage_hook is not None:
            await self.stage_hook(job.id, stage)
        return job

    async def _heartbeat(self, job_id: str) -> None:
        """Renew the lease while the job runs, so no other worker takes a slow job over."""
        while True:
            await asyncio.sleep(self.lease.total_seconds() / 4)
            async with self.database.sessions() as session, session.begin():
                await session.execute(
                    update(JobRow)
                    .where(JobRow.id == job_id, JobRow.state == JobState.RUNNING)
                    .values(lease_until=datetime.now(UTC) + self.lease)
                )

    async def _run(self, job: JobRow) -> None:
        job_id = JOB_ID.set(job.id)
        self._running.add(job.id)
        heartbeat = asyncio.create_task(self._heartbeat(job.id))
        try:
            await self._stages(job)
        except ProvenoteError as failure:
            await self._fail(job, str(failure))
        except Exception:  # whatever a job raises ends that job, never the worker
            error_id = new_error_id()
            log.exception("job %s failed (error %s)", job.id, error_id)
            await self._fail(job, f"internal error while drafting (error {error_id})")
        finally:
            self._time_stage(job.id, None)
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            self._running.discard(job.id)
            JOB_ID.reset(job_id)

    async def _fail(self, job: JobRow, message: str) -> None:
        await self._update(job.id, state=JobState.FAILED, error=message, lease_until=None)
        JOBS_FINISHED.labels(JobState.FAILED).inc()

    def _check_inpatient(self, state: Any) -> None:
        """A discharge summary is drafted for an inpatient stay only; anything else is refused
        before a draft exists, so nothing is written."""
        stays = [
            fact.attributes
            for fact in state.facts.get("encounter", [])
            if getattr(fact.attributes, "kind", None) == "stay"
        ]
        kind = stays[0].class_code if stays else None
        if kind not in self.inpatient_classes:
            raise ProvenoteError(
                f"not an inpatient stay (encounter class {kind or 'unknown'}): Provenote drafts "
                "discharge summaries for inpatient stays only; nothing was written"
            )

    async def _stages(self, job: JobRow) -> None:
        client, scope = await self.client_for(job)
        if job.record is None:
            job = await self._stage(job, JobStage.FETCHING, 0.05, "pulling the record from the EHR")
            record = await pull_record(client, job.patient, job.encounter, self.pull_bounds)
            job = await self._update(job.id, record=record)
        draft = await self.draft_of(job.id)
        if draft is None:
            documents = type_counts(job.record)["DocumentReference"]
            job = await self._stage(
                job, JobStage.INGESTING, 0.35, f"ingesting {documents} documents, building evidence"
            )
            try:
                state = await asyncio.to_thread(
                    evidence_from_fhir,
                    job.record,
                    job.encounter and f"Encounter/{job.encounter}",
                    self.pipeline_settings,
                )
            except InputError as unusable:  # says what is wrong, never the content
                raise ProvenoteError(f"the record cannot be summarized: {unusable}") from unusable
            self._check_inpatient(state)
            job = await self._stage(job, JobStage.SUMMARIZING, 0.6, "drafting the summary")
            draft = await self._store_draft(job, state)
        job = await self._stage(
            job, JobStage.WRITING_BACK, 0.85, "writing the draft back to the EHR"
        )
        write = Write(self.installation, self.forced_strategies.get(job.iss), job.may_write)
        outcome = await self.drafts.write_back(client, draft, scope, write)
        WRITE_BACKS.labels(outcome.strategy, outcome.status).inc()
        await self.drafts.audit(
            f"provenote job {job.id}",
            f"write_back_{outcome.status}",
            draft.id,
            f"{outcome.strategy} at {outcome.target}"
            + (f": {outcome.remote_type}/{outcome.remote_id}" if outcome.remote_id else ""),
        )
        await self._update(
            job.id,
            state=JobState.DONE,
            stage=JobStage.DONE,
            progress=1.0,
            detail=f"draft {draft.id} stored; write-back {outcome.strategy}: "
            + WRITE_BACK_WORDS.get(WriteBackStatus(outcome.status), outcome.status),
            lease_until=None,
        )
        JOBS_FINISHED.labels(JobState.DONE).inc()

    async def draft_of(self, job_id: str) -> DraftRow | None:
        return await self.drafts.of_job(job_id)

    async def _store_draft(self, job: JobRow, state: EvidenceState) -> DraftRow:
        summary, state, unavailable = await self._summarize(job, state)
        draft = await self.drafts.create(
            job_id=job.id,
            iss=job.iss,
            patient=job.patient,
            summary=summary,
            state=state,
            bundle=draft_bundle(summary, state, datetime.now(UTC)),
            markdown=render_markdown(summary, state),
        )
        if unavailable is not None:
            await self.drafts.audit(
                f"provenote job {job.id}", MODEL_UNAVAILABLE, draft.id, unavailable
            )
        return draft

    async def _summarize(
        self, job: JobRow, state: EvidenceState
    ) -> tuple[Summary, EvidenceState, str | None]:
        """The summary and the state it cites, with the model when one is configured; when the
        model cannot be used, the evidence-only summary and why (or the job fails, if so set).
        Never half of a model's work: extraction and the loop succeed together or not at all."""
        model = self.language_model
        unavailable = None
        if model is not None:
            loop = asyncio.get_running_loop()

            def progress(step: str) -> None:
                update = self._update(job.id, detail=step)
                asyncio.run_coroutine_threadsafe(update, loop).result()

            try:
                extended, summary = await asyncio.to_thread(
                    draft_with_model,
                    state,
                    model.backend,
                    settings=LoopSettings.from_settings(self.pipeline_settings, model.tau),
                    max_agent_steps=self.pipeline_settings.max_agent_steps,
                    grounding=model.grounding,
                    progress=progress,
                )
                return summary, extended, None
            except ModelError as failure:
                error_id = new_error_id()
                # The server's words may quote the prompt (patient data): they go to the log only.
                log.warning(
                    "job %s: model %s failed (error %s): %s",
                    job.id,
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
                await self._update(
                    job.id, detail=f"{MODEL_UNAVAILABLE}: drafting from the evidence"
                )
        summary = await asyncio.to_thread(
            summarize_evidence,
            state,
            ratio=self.pipeline_settings.focus_ratio,
            settings=self.pipeline_settings,
        )
        return summary.model_copy(update={"model_unavailable": unavailable}), state, unavailable
