"""The job service and its queue, as the settings ask: in-process workers, or procrastinate's."""

from __future__ import annotations

from smartapp.access.tokens import EhrAccess
from smartapp.core.db import Database
from smartapp.core.language_models import language_model
from smartapp.core.settings import Settings
from smartapp.ehr.pull import PullBounds
from smartapp.jobs.progress import PostgresProgressBus, ProgressBus
from smartapp.jobs.queue import InProcessQueue, JobQueue, ProcrastinateQueue
from smartapp.jobs.service import JobService, StageHook


def job_queue(settings: Settings) -> JobQueue:
    """The queue the settings name: workers in this process, or procrastinate's."""
    if settings.job_queue == "procrastinate":
        return ProcrastinateQueue(
            settings.database_dsn,
            concurrency=settings.worker_concurrency,
            heartbeat_s=settings.worker_heartbeat_s,
            stalled_after_s=settings.worker_stalled_after_s,
            shutdown_grace_s=settings.shutdown_grace_s,
            install_schema=settings.migrate_on_start,
        )
    return InProcessQueue(settings.job_workers)


def job_service(
    settings: Settings,
    database: Database,
    access: EhrAccess,
    installation: str,
    queue: JobQueue,
    stage_hook: StageHook | None = None,
    worker_name: str | None = None,
) -> JobService:
    """The job service of a started process (its database migrated, its installation known)."""
    progress = PostgresProgressBus(database.engine) if database.is_postgresql else ProgressBus()
    return JobService(
        database,
        access.client_for_job,
        queue=queue,
        progress=progress,
        lease_s=settings.job_lease_s,
        forced_strategies=settings.writeback_strategies,
        stage_hook=stage_hook,
        installation=installation,
        inpatient_classes=settings.inpatient_classes,
        pipeline_settings=settings,
        language_model=language_model(settings),
        model_fallback=settings.model_fallback,
        worker_name=worker_name,
        acts_as_itself=lambda iss: access.registration(iss).acts_as_itself,
        pull_bounds=PullBounds(
            window_h=settings.episode_window_h,
            lookback_days=settings.record_lookback_days,
            inpatient_classes=settings.inpatient_classes,
        ),
    )
