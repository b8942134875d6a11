"""What one job does, stage by stage: pull the record, build the evidence, draft, write back.

Each stage's output is stored before the next starts (``JobService.update``), so a job run
again after an interruption starts at the first stage whose output is missing. Running jobs
durably (leases, failures, hand-backs) is ``smartapp.jobs.service``'s business.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from fhir_mapping.resources import record_digest, type_counts
from fhir_mapping.write_strategy import Strategy
from pipeline.errors import InputError, ProvenoteError
from pipeline.settings import PipelineSettings
from smartapp.core.statuses import DRAFTED_AHEAD, JobStage, WriteBackStatus
from smartapp.core.tables import DraftRow, JobRow
from smartapp.drafts.service import DraftService
from smartapp.drafts.store import job_actor
from smartapp.drafts.writing import WRITE_BACK_WORDS, Write
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import PullBounds, pull_record
from smartapp.jobs.drafting import Drafting
from smartapp.jobs.evidence import evidence_from_fhir, require_inpatient

# What a draft made ahead says until a physician opens it.
HELD_UNTIL_OPENED = "written to the chart when a physician opens it"
ClientFactory = Callable[[JobRow], Awaitable[tuple[FhirClient, str]]]


class JobSteps(Protocol):
    """What the stages need of whoever runs the job (``JobService``): its parts, and how it
    stores a stage, an output and the end."""

    client_for: ClientFactory
    pull_bounds: PullBounds
    pipeline_settings: PipelineSettings
    inpatient_classes: set[str]
    drafting: Drafting
    drafts: DraftService
    installation: str
    forced_strategies: dict[str, Strategy]

    async def enter_stage(self, job: JobRow, stage: str, progress: float, detail: str) -> JobRow:
        """Store and announce that ``job`` starts ``stage``."""
        ...

    async def update(self, job_id: str, **values: Any) -> JobRow:
        """Store ``values`` on the job and announce it."""
        ...

    async def finish(self, job: JobRow, detail: str) -> None:
        """Store that the job is done."""
        ...

    async def draft_of(self, job_id: str) -> DraftRow | None:
        """The job's draft, once stored."""
        ...


async def run_stages(service: JobSteps, job: JobRow) -> None:
    """Take ``job`` from its last stored output to its end."""
    client, scope = await service.client_for(job)
    if job.record is None:
        job = await service.enter_stage(
            job, JobStage.FETCHING, 0.05, "pulling the record from the EHR"
        )
        record = await pull_record(client, job.patient, job.encounter, service.pull_bounds)
        job = await service.update(job.id, record=record, record_digest=record_digest(record))
    draft = await service.draft_of(job.id)
    if draft is None:
        documents = type_counts(job.record)["DocumentReference"]
        job = await service.enter_stage(
            job, JobStage.INGESTING, 0.35, f"ingesting {documents} documents, building evidence"
        )
        try:
            state = await asyncio.to_thread(
                partial(evidence_from_fhir, settings=service.pipeline_settings),
                job.record,
                job.encounter and f"Encounter/{job.encounter}",
            )
        except InputError as unusable:  # says what is wrong, never the content
            raise ProvenoteError(f"the record cannot be summarized: {unusable}") from unusable
        require_inpatient(state, service.inpatient_classes)
        job = await service.enter_stage(job, JobStage.SUMMARIZING, 0.6, "drafting the summary")
        draft = await service.drafting.store(
            job, state, service.drafts, lambda step: service.update(job.id, detail=step)
        )
    if job.origin in DRAFTED_AHEAD and not job.may_write:
        await service.finish(job, f"draft {draft.id} stored; {HELD_UNTIL_OPENED}")
        return
    job = await service.enter_stage(
        job, JobStage.WRITING_BACK, 0.85, "writing the draft back to the EHR"
    )
    write = Write(service.installation, service.forced_strategies.get(job.iss), job.may_write)
    outcome = await service.drafts.write_back(client, draft, scope, write, job_actor(job.id))
    await service.finish(
        job,
        f"draft {draft.id} stored; write-back {outcome.strategy}: "
        + WRITE_BACK_WORDS.get(WriteBackStatus(outcome.status), outcome.status),
    )
