"""The deterministic agent loop: reconcile, detect conflicts, validate, until the state validates.

Each agent is a pure function of the evidence state and every step is a TraceEvent. The loop is
bounded: should validation keep rejecting facts past ``max_steps``, it stops and flags the state
for review rather than looping or passing it on as clean.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from pipeline.clinical.conflicts import detect_conflicts
from pipeline.clinical.reconcile import reconcile
from pipeline.clinical.validate import validate
from pipeline.evidence.model import EvidenceState, ReviewFlag, TraceEvent, stable_id
from pipeline.settings import RENEWAL_WINDOW

Agent = Callable[[EvidenceState], tuple[EvidenceState, str, bool]]


def _always_settled(step: Callable[[EvidenceState], tuple[EvidenceState, str]]) -> Agent:
    def run(state: EvidenceState) -> tuple[EvidenceState, str, bool]:
        updated, detail = step(state)
        return updated, detail, False

    return run


def agents(renewal_window: timedelta = RENEWAL_WINDOW) -> tuple[tuple[str, Agent], ...]:
    """The agents in the order they run, with the deployment's renewal window for orders."""
    return (
        ("reconcile", _always_settled(lambda state: reconcile(state, renewal_window))),
        ("detect_conflicts", _always_settled(detect_conflicts)),
        ("validate", validate),
    )


def run_agent_loop(
    state: EvidenceState, max_steps: int, *, renewal_window: timedelta = RENEWAL_WINDOW
) -> EvidenceState:
    """Run the agents in order until a validation pass changes nothing, within ``max_steps``."""
    running = agents(renewal_window)
    step = state.step_count
    trace = list(state.trace)
    while True:
        changed = False
        for name, agent in running:
            if step >= max_steps:
                return _budget_exhausted(state, trace, step, max_steps)
            step += 1
            state, detail, agent_changed = agent(state)
            changed = changed or agent_changed
            trace.append(TraceEvent(step=step, agent=name, action="run", detail=detail))
        if not changed:
            return state.model_copy(update={"trace": trace, "step_count": step})


def _budget_exhausted(
    state: EvidenceState, trace: list[TraceEvent], step: int, max_steps: int
) -> EvidenceState:
    trace.append(
        TraceEvent(
            step=step,
            agent="supervisor",
            action="stop",
            detail=f"step budget of {max_steps} spent before the state validated",
        )
    )
    flag = ReviewFlag(
        id=stable_id("flag", "budget", max_steps),
        code="loop_budget_exhausted",
        reason=f"the evidence did not validate within {max_steps} agent steps",
        raised_by="supervisor",
    )
    return state.model_copy(
        update={
            "trace": trace,
            "step_count": step,
            "flags_for_review": [*state.flags_for_review, flag],
        }
    )
