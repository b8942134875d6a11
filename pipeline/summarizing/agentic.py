"""The agentic summarizer: draft, detect, fix, and a supervisor that decides when to stop.

The narrative section (hospital course) is written by a language model; the structured sections
(medications, allergies, results...) stay those of the evidence-only summarizer. Each pass:

- **detect**, per sentence: the fact checker (against the sentence's cited facts), entailment
  judged by the model against the cited evidence plus the top-k most similar note sentences
  (MiniLM), and AURA when a grounding scorer is given. Flagged: entailment fails, AURA < τ, or a
  check fails.
- **supervisor**: stops when nothing is flagged; when the mean AURA moved less than ε; when no new
  sentence is flagged (H(t) \\ H(t−1) = ∅); or at T_max. Every decision and its reason is kept.
- **fix**: rewrites (or deletes) only the flagged sentences, one model call each; the others stay
  byte-identical; the result is re-segmented and detected again on the next pass.

Model calls for independent sentences (entailment per sentence, fixes) run concurrently, up to
``LoopSettings.concurrency`` at once. A soft check failing (content words the evidence lacks)
marks a sentence weakly grounded for the physician; it is not a reason to rewrite it.

Unlike the published AgenticSum code, detection runs on every pass (nothing is cached), the
model's answers are parsed strictly as JSON with a bounded retry (never by substring), and the loop
can run more than once. Note text reaches the model only inside <data> blocks, under a system
prompt that says such text is never an instruction.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pipeline.backends.chat import (
    ChatBackend,
    Metered,
    Progress,
    no_progress,
)
from pipeline.evidence.model import EvidenceState, stable_id
from pipeline.evidence.summary import NOT_DOCUMENTED, Sentence, SentenceFlag, Summary
from pipeline.summarizing.agent_calls import (
    NARRATIVE,
    Draft,
    GroundingScorer,
    LoopSettings,
    ask_agent,
)
from pipeline.summarizing.detect_agent import detect, low_grounding
from pipeline.summarizing.draft_agent import draft_inputs, drafts_of
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.extraction import with_model_extraction
from pipeline.summarizing.fix_agent import fix
from pipeline.summarizing.focus import TokenSalience


def _stop_reason(
    iteration: int,
    flagged: set[str],
    previous: set[str],
    mean: float | None,
    previous_mean: float | None,
    settings: LoopSettings,
) -> str:
    """The supervisor's decision after a pass: why to stop, or "" to fix the flagged sentences."""
    if not flagged:
        return "no_flags"
    if (
        iteration > 1
        and mean is not None
        and previous_mean is not None
        and abs(mean - previous_mean) < settings.epsilon
    ):
        return "grounding_converged"
    if iteration > 1 and not flagged - previous:
        return "no_new_flags"
    if iteration == settings.max_iterations:
        return "budget"
    return ""


def _decision(
    iteration: int, flagged: int, total: int, mean: float | None, stop_reason: str
) -> str:
    """The supervisor's decision as the summary records it."""
    return (
        f"pass {iteration}: {flagged} of {total} sentences flagged"
        + (f", mean AURA {mean:.3f}" if mean is not None else "")
        + (f"; stop: {stop_reason}" if stop_reason else "; fix the flagged sentences")
    )


def _narrative(sentences: list[Draft], settings: LoopSettings) -> list[Sentence]:
    """The hospital course's sentences as the summary holds them, each with its flags."""
    narrative = []
    for sentence in sentences:
        flags = []
        if sentence.entailment == "unsupported":
            verifier = [c.detail for c in sentence.checks if c.check == "entailment" and c.detail]
            reason = "; ".join([*sentence.spans, *verifier]) or "unsupported"
            flags.append(SentenceFlag(code="entailment", reason=reason))
        if low_grounding(sentence, settings):
            flags.append(
                SentenceFlag(
                    code="low_grounding", reason=f"AURA {sentence.grounding:.2f} < {settings.tau}"
                )
            )
        narrative.append(
            Sentence(
                id=stable_id("s", NARRATIVE, sentence.text, *sentence.citations),
                section=NARRATIVE,
                text=sentence.text,
                citations=sentence.citations,
                grounding=sentence.grounding,
                entailment=sentence.entailment,
                checks=sentence.checks,
                flags=flags,
            )
        )
    return narrative


def _with_narrative(base: Summary, narrative: list[Sentence], **update: Any) -> Summary:
    sections = [
        section.model_copy(
            update={"sentences": narrative, "empty_reason": None if narrative else NOT_DOCUMENTED}
        )
        if section.key == NARRATIVE
        else section
        for section in base.sections
    ]
    return base.model_copy(update={"sections": sections, **update})


def agentic_summary(
    state: EvidenceState,
    backend: ChatBackend,
    *,
    settings: LoopSettings,
    grounding: GroundingScorer | None = None,
    salience: TokenSalience | None = None,
    progress: Progress = no_progress,
) -> Summary:
    """The summary with a model-written, checked and repaired hospital course.

    Pass the state from :func:`pipeline.summarizing.extraction.with_model_extraction` to draft
    from the model's quoted extractions too; build the Composition from that same state
    (:func:`draft_with_model` does both).
    """
    base = summarize_evidence(
        state, ratio=settings.ratio, salience=salience, settings=settings.pipeline
    )
    given = draft_inputs(state, base, backend, settings)
    facts, notes, prompt = given.facts, given.notes, given.prompt
    source_spans = [(prompt.index("<data>"), len(prompt))]
    progress("drafting the hospital course")
    answer = ask_agent(backend, prompt, ["sentences"], given.schema, settings)
    sentences = drafts_of(answer, prompt, facts)
    decisions: list[str] = []
    previous: set[str] = set()
    previous_mean: float | None = None
    stop_reason = "budget"
    iteration = 0
    for iteration in range(1, settings.max_iterations + 1):
        progress(f"pass {iteration}: detecting {len(sentences)} sentences")
        detect(sentences, state, backend, facts, notes, settings, grounding, prompt, source_spans)
        flagged = [s for s in sentences if s.flagged or low_grounding(s, settings)]
        current = {s.text for s in flagged}
        scores = [s.grounding for s in sentences if s.grounding is not None]
        mean = sum(scores) / len(scores) if scores else None
        stop_reason = _stop_reason(iteration, current, previous, mean, previous_mean, settings)
        decisions.append(_decision(iteration, len(flagged), len(sentences), mean, stop_reason))
        if stop_reason:
            break
        progress(f"pass {iteration}: fixing {len(flagged)} sentences")
        fixes = dict(
            zip(map(id, flagged), fix(flagged, backend, facts, notes, settings), strict=True)
        )
        sentences = [
            fixed for sentence in sentences for fixed in fixes.get(id(sentence), [sentence])
        ]
        previous, previous_mean = current, mean
    return _with_narrative(
        base,
        _narrative(sentences, settings),
        backend=backend.name,
        backend_version=backend.version,
        iterations=iteration,
        stop_reason=stop_reason,
        decisions=decisions,
    )


def draft_with_model(
    state: EvidenceState,
    backend: ChatBackend,
    *,
    settings: LoopSettings,
    max_agent_steps: int = 12,
    grounding: GroundingScorer | None = None,
    salience: TokenSalience | None = None,
    progress: Progress = no_progress,
) -> tuple[EvidenceState, Summary]:
    """Extraction, then the agentic loop: the state to build the Composition from and the
    summary, with the model's calls and tokens for this draft counted.

    All or nothing: any model failure (unreachable, unusable answers) is raised, so the caller
    can fall back to the evidence-only draft rather than keep half of a model's work.
    """
    metered = Metered(backend)
    extended = with_model_extraction(
        state,
        metered,
        max_agent_steps,
        limits=settings.limits,
        progress=progress,
        strict=True,
        renewal_window=timedelta(days=settings.renewal_window_days),
        budget_s=settings.extraction_budget_s,
        concurrency=settings.concurrency,
    )
    summary = agentic_summary(
        extended,
        metered,
        settings=settings,
        grounding=grounding,
        salience=salience,
        progress=progress,
    )
    return extended, summary.model_copy(update={"model_usage": metered.usage})


# The loop's public face: its settings and its scorer type are imported from here.
__all__ = ["GroundingScorer", "LoopSettings", "agentic_summary", "draft_with_model"]
