"""How long each job stage took (``provenote_job_stage_seconds``), timed as the stages change."""

from __future__ import annotations

import time

from smartapp.core.metrics import STAGE_SECONDS


class StageClock:
    """The stage each running job is in and since when, in this process."""

    def __init__(self) -> None:
        self._started: dict[str, tuple[str, float]] = {}

    def change(self, job_id: str, stage: str | None) -> None:
        """End the job's current stage on the clock (its duration observed), start ``stage``
        (None: the job stopped)."""
        started = self._started.pop(job_id, None)
        if started is not None:
            STAGE_SECONDS.labels(started[0]).observe(time.monotonic() - started[1])
        if stage is not None:
            self._started[job_id] = (stage, time.monotonic())
