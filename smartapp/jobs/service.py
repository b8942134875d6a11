"""Summarization jobs: launch → pull the record → evidence → draft → write-back, durably (the
stages themselves are ``smartapp.jobs.stages``).

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
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from fhir_mapping.resources import record_digest
from fhir_mapping.write_strategy import Strategy
from pipeline.errors import ProvenoteError
from pipeline.evidence.mapped import INPATIENT_CLASSES
from pipeline.settings import PipelineSettings
from smartapp.access.tokens import GrantEndedError
from smartapp.core.db import Database
from smartapp.core.errors import log, new_error_id
from smartapp.core.language_models import LanguageModel
from smartapp.core.logs import JOB_ID, REQUEST_ID
from smartapp.core.metrics import JOBS_FINISHED, JOBS_REQUEUED
from smartapp.core.statuses import JobOrigin, JobStage, JobState
from smartapp.core.tables import DraftRow, JobRow
from smartapp.drafts.service import DraftService
from smartapp.ehr.pull import PullBounds
from smartapp.jobs.drafting import Drafting
from smartapp.jobs.progress import ProgressBus
from smartapp.jobs.queue import InProcessQueue, JobQueue
from smartapp.jobs.repository import JobRepository, job_view
from smartapp.jobs.stage_clock import StageClock
from smartapp.jobs.stages import ClientFactory, run_stages

StageHook = Callable[[str, str], Awaitable[None]]
LENT_TOKEN_ENDED = (
    "the EHR ended the access it lent; drafting as Provenote itself (SMART Backend Services)"
)
__all__ = ["ClientFactory", "JobService", "StageHook", "job_view"]


class JobService:
    def __init__(
        self,
        database: Database,
        client_for: ClientFactory,
        *,
        pipeline_settings: PipelineSettings,
        queue: JobQueue | None = None,
        progress: ProgressBus | None = None,
        lease_s: float = 120.0,
        forced_strategies: dict[str, Strategy] | None = None,
        stage_hook: StageHook | None = None,
        installation: str = "",
        inpatient_classes: list[str] | None = None,
        pull_bounds: PullBounds | None = None,
        language_model: LanguageModel | None = None,
        model_fallback: str = "evidence-only",
        worker_name: str | None = None,
        acts_as_itself: Callable[[str], bool] | None = None,
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
        self.inpatient_classes = set(inpatient_classes or INPATIENT_CLASSES)
        self.pull_bounds = pull_bounds or PullBounds()
        # The pipeline's settings, read once at start-up by whoever builds the service.
        self.pipeline_settings = pipeline_settings
        # The model that drafts (None: evidence-only), loaded once per process, and what a job
        # does when it cannot be used: "evidence-only" (marked on the draft) or "fail".
        self.drafting = Drafting(self.pipeline_settings, language_model, model_fallback)
        # Whether Provenote may reach an EHR as itself (its registration): a hook job whose lent
        # token the EHR ends goes on that way.
        self.acts_as_itself = acts_as_itself or (lambda iss: False)
        # Which process runs a job, for operators: a worker's --name, else host:pid.
        self.worker_name = worker_name or f"{socket.gethostname()}:{os.getpid()}"
        self.jobs = JobRepository(database, self.lease, self.worker_name)
        self.stage_clock = StageClock()
        # Jobs this process is running: never taken for dead by this process's own workers,
        # whose event loop a long synchronous step can hold past a short lease.
        self._running: set[str] = set()

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.progress.start()
        await self.queue.start(self)

    async def stop(self) -> None:
        """Stop the workers; the jobs in hand go back to the queue for another worker."""
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
        origin: JobOrigin = JobOrigin.LAUNCH,
        api_client: str | None = None,
        may_write: bool = True,
        record: dict[str, Any] | None = None,
    ) -> JobRow:
        """A new job, or the one already queued or running for this patient and encounter
        (``JobRepository.find_or_create``). A new job given the ``record`` its caller has just
        pulled drafts from it rather than pulling it again."""
        job, created = await self.jobs.find_or_create(
            iss,
            patient,
            encounter,
            session_id=session_id,
            origin=origin,
            api_client=api_client,
            may_write=may_write,
        )
        # The rest of the request's log lines (its access line among them) name the job.
        JOB_ID.set(job.id)
        if created:
            if record is not None:
                job = await self.jobs.update(
                    job.id, record=record, record_digest=record_digest(record)
                )
            await self.queue.enqueue(job.id)
            log.info("job %s queued", job.id, extra={"event": "job_queued"})
        return job

    async def latest_for(self, iss: str, patient: str, encounter: str | None) -> JobRow | None:
        """The newest job for a patient's stay on an EHR (a launch may share it)."""
        return await self.jobs.latest_for(iss, patient, encounter)

    async def running_for_client(self, api_client: str) -> int:
        """Jobs an API client has queued or running."""
        return await self.jobs.running_for_client(api_client)

    async def retry(self, job_id: str) -> JobRow | None:
        """Queue a failed job again; it continues from what it had stored."""
        job, reopened = await self.jobs.reopen_failed(job_id)
        if reopened:
            JOBS_REQUEUED.labels("retried").inc()
            await self.queue.enqueue(job_id)
        return job

    async def get(self, job_id: str) -> JobRow | None:
        return await self.jobs.get(job_id)

    async def ready(self) -> bool:
        """Whether a job submitted now will be run."""
        return await self.queue.ready()

    async def live_workers(self) -> int:
        return await self.queue.live_workers()

    def listen(self, job_id: str) -> asyncio.Queue[dict[str, Any]]:
        return self.progress.listen(job_id)

    def unlisten(self, job_id: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.progress.unlisten(job_id, queue)

    # --- working ---------------------------------------------------------------------------------

    async def run_next(self) -> bool:
        if expired := await self.jobs.requeue_expired(self._running):
            JOBS_REQUEUED.labels("lease_expired").inc(expired)
        job = await self.jobs.claim_next()
        if job is None:
            return False
        await self._run(job)
        return True

    async def run_by_id(self, job_id: str) -> None:
        """Run a job a queue delivered: the queue decided this worker runs it (a stalled
        worker's job included), so a running row is taken over; an ended one is left."""
        job = await self.jobs.take_over(job_id)
        if job is not None:
            await self._run(job)

    async def update(self, job_id: str, **values: Any) -> JobRow:
        job = await self.jobs.update(job_id, **values)
        await self.progress.publish(job_id, job_view(job))
        return job

    async def enter_stage(self, job: JobRow, stage: str, progress: float, detail: str) -> JobRow:
        self.stage_clock.change(job.id, stage)
        log.info("job %s: %s", job.id, stage, extra={"event": "job_stage", "stage": stage})
        job = await self.update(job.id, stage=stage, progress=progress, detail=detail)
        if self.stage_hook is not None:
            await self.stage_hook(job.id, stage)
        return job

    async def _heartbeat(self, job_id: str) -> None:
        """Renew the lease while the job runs, so no other worker takes a slow job over."""
        while True:
            await asyncio.sleep(self.lease.total_seconds() / 4)
            await self.jobs.renew_lease(job_id)

    async def _run(self, job: JobRow) -> None:
        job_id = JOB_ID.set(job.id)
        request_id = REQUEST_ID.set(job.request_id)
        self._running.add(job.id)
        log.info(
            "job %s started (attempt %d)",
            job.id,
            job.attempts,
            extra={"event": "job_started"},
        )
        heartbeat = asyncio.create_task(self._heartbeat(job.id))
        try:
            await self._stages_with_access(job)
        except asyncio.CancelledError:
            # The worker is stopping (SIGTERM past its grace period, or shutdown): the job goes
            # back to the queue now rather than when its lease runs out.
            await asyncio.shield(self._release(job.id))
            raise
        except ProvenoteError as failure:
            await self._fail(job, str(failure))
        except Exception:  # whatever a job raises ends that job, never the worker
            error_id = new_error_id()
            log.exception("job %s failed (error %s)", job.id, error_id)
            await self._fail(job, f"internal error while drafting (error {error_id})")
        finally:
            self.stage_clock.change(job.id, None)
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            self._running.discard(job.id)
            REQUEST_ID.reset(request_id)
            JOB_ID.reset(job_id)

    async def _stages_with_access(self, job: JobRow) -> None:
        """The job's stages; a hook job whose lent token the EHR ends on the way goes on as
        Provenote itself (once), where the EHR's registration allows it, from what it stored."""
        try:
            await run_stages(self, job)
        except GrantEndedError:
            if job.origin != JobOrigin.HOOK or not self.acts_as_itself(job.iss):
                raise
            log.warning(
                "job %s: the EHR ended the token it lent; going on as Provenote itself", job.id
            )
            job = await self.update(
                job.id, origin=JobOrigin.PREDRAFT, session_id="", detail=LENT_TOKEN_ENDED
            )
            await run_stages(self, job)

    async def _release(self, job_id: str) -> None:
        if await self.jobs.release(job_id):
            JOBS_REQUEUED.labels("handed_back").inc()
            log.warning("job %s released: this worker is stopping", job_id)
            released = await self.jobs.get(job_id)
            if released is not None:
                await self.progress.publish(job_id, job_view(released))
            await self.queue.enqueue(job_id)

    async def _fail(self, job: JobRow, message: str) -> None:
        await self.update(job.id, state=JobState.FAILED, error=message, lease_until=None)
        JOBS_FINISHED.labels(JobState.FAILED).inc()
        # The message names no patient data (ProvenoteError's words are written for users).
        log.info(
            "job %s failed: %s", job.id, message, extra={"event": "job_ended", "state": "failed"}
        )

    async def finish(self, job: JobRow, detail: str) -> None:
        await self.update(
            job.id,
            state=JobState.DONE,
            stage=JobStage.DONE,
            progress=1.0,
            detail=detail,
            lease_until=None,
        )
        JOBS_FINISHED.labels(JobState.DONE).inc()
        log.info("job %s done", job.id, extra={"event": "job_ended", "state": "done"})

    async def draft_of(self, job_id: str) -> DraftRow | None:
        return await self.drafts.of_job(job_id)
