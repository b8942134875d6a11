"""Jobs and drafts move only along their allowed transitions."""

from __future__ import annotations

import pytest

from smartapp.core.statuses import (
    DRAFT_MOVES,
    JOB_MOVES,
    DraftStatus,
    InvalidMoveError,
    JobState,
    moved,
)


@pytest.mark.parametrize(
    ("current", "new"),
    [
        (DraftStatus.PRELIMINARY, DraftStatus.SIGNING),
        (DraftStatus.SIGNING, DraftStatus.FINAL),
        (DraftStatus.SIGNING, DraftStatus.PRELIMINARY),
    ],
)
def test_a_draft_is_signed_through_a_claim_that_completes_or_is_released(
    current: DraftStatus, new: DraftStatus
) -> None:
    assert moved(DRAFT_MOVES, current.value, new) is new


@pytest.mark.parametrize("new", list(DraftStatus))
def test_a_final_draft_never_changes_again(new: DraftStatus) -> None:
    with pytest.raises(InvalidMoveError, match="cannot go from final"):
        moved(DRAFT_MOVES, "final", new)


def test_a_draft_is_never_final_without_a_signing_claim() -> None:
    with pytest.raises(InvalidMoveError):
        moved(DRAFT_MOVES, "preliminary", DraftStatus.FINAL)


def test_a_finished_job_is_never_queued_or_failed_again() -> None:
    assert moved(JOB_MOVES, "done", JobState.DONE) is JobState.DONE  # a duplicate delivery
    for new in (JobState.QUEUED, JobState.RUNNING, JobState.FAILED):
        with pytest.raises(InvalidMoveError):
            moved(JOB_MOVES, "done", new)


def test_only_a_failed_job_is_retried_and_a_queued_job_is_run_before_it_ends() -> None:
    assert moved(JOB_MOVES, "failed", JobState.QUEUED) is JobState.QUEUED
    with pytest.raises(InvalidMoveError):
        moved(JOB_MOVES, "queued", JobState.DONE)
    with pytest.raises(InvalidMoveError):
        moved(JOB_MOVES, "failed", JobState.DONE)
