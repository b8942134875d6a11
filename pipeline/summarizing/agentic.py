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

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from pipeline.backends.answer_schemas import answer_budget, entailment_schema, sentences_schema
from pipeline.backends.chat import (
    ChatBackend,
    Metered,
    ModelOutputError,
    Progress,
    ask_json,
    in_parallel,
    no_progress,
    token_counter,
)
from pipeline.backends.retrieval import nearest
from pipeline.checking.checker import check_cited_sentence
from pipeline.checking.claims import claim_problem
from pipeline.evidence.model import EvidenceState, stable_id
from pipeline.evidence.summary import NOT_DOCUMENTED, SectionKey, Sentence, SentenceFlag, Summary
from pipeline.settings import DEFAULT_AURA_TAU, RENEWAL_WINDOW, PipelineSettings, SchemaLimits
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.extraction import with_model_extraction
from pipeline.summarizing.focus import TokenSalience
from pipeline.text.echoes import restates_instructions
from pipeline.text.rendering import render
from pipeline.text.sentences import split_sentences

GroundingScorer = Callable[
    [str, list[tuple[int, int]], str, list[tuple[int, int]]], list[float | None]
]
NARRATIVE: SectionKey = "hospital_course"


class LoopSettings(BaseModel):
    """τ, ε, T_max and r, concurrent model calls and the answer schemas' limits;
    ``from_settings`` takes them from the deployment's settings."""

    tau: float = Field(DEFAULT_AURA_TAU, ge=0, le=1)
    epsilon: float = Field(0.01, ge=0)
    max_iterations: int = Field(3, ge=1, le=10)
    ratio: float = Field(0.5, gt=0, le=1)
    top_k: int = Field(3, ge=0)
    json_retries: int = Field(2, ge=0, le=5)
    concurrency: int = Field(4, ge=1, le=64)
    limits: SchemaLimits = Field(default_factory=SchemaLimits)
    renewal_window_days: int = Field(RENEWAL_WINDOW.days, ge=1)
    extraction_budget_s: float | None = Field(None, gt=0)
    # The deployment's drafting settings (its clinical tables among them), for the parts of the
    # summary told from the evidence.
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)

    @classmethod
    def from_settings(
        cls, settings: PipelineSettings, model_tau: float | None = None
    ) -> LoopSettings:
        """The deployment's settings; τ, unless the deployment sets it, is the drafting model's
        own calibrated one (``model_tau``), else AgenticSum's."""
        tau = settings.aura_tau if settings.aura_tau is not None else model_tau
        return cls(
            tau=DEFAULT_AURA_TAU if tau is None else tau,
            epsilon=settings.aura_epsilon,
            max_iterations=settings.max_iterations,
            ratio=settings.focus_ratio,
            concurrency=settings.model_concurrency,
            limits=settings.answer_limits,
            renewal_window_days=settings.medication_renewal_window_days,
            extraction_budget_s=settings.extraction_budget_s,
            pipeline=settings,
        )


@dataclass(slots=True)
class Draft:
    text: str
    citations: list[str]
    checks: list[Any] = field(default_factory=list)
    entailment: str | None = None
    spans: list[str] = field(default_factory=list)
    grounding: float | None = None

    @property
    def flagged(self) -> bool:
        """To be fixed: the model found it unsupported, or a hard check failed."""
        return (
            bool(self.spans)
            or self.entailment == "unsupported"
            or any(not check.passed for check in self.checks if check.severity == "hard")
        )


def _ask(
    backend: ChatBackend,
    prompt: str,
    required: list[str],
    schema: dict[str, Any],
    settings: LoopSettings,
) -> dict[str, Any]:
    """One agent's question under the system prompt, answered as JSON of ``schema``."""
    system = {"role": "system", "content": render("prompts/system.txt.j2")}
    # A draft or a fix cut short keeps its complete sentences (each checked like any other).
    salvage = "sentences" if required == ["sentences"] else None
    return ask_json(
        backend,
        [system, {"role": "user", "content": prompt}],
        required,
        settings.json_retries,
        schema,
        salvage=salvage,
    )


def _evidence_lines(
    sentence: Draft, facts: dict[str, str], notes: list[str], settings: LoopSettings
) -> list[str]:
    lines = [facts[c] for c in sentence.citations if c in facts]
    if settings.top_k and notes:
        (found,) = nearest([sentence.text], notes, settings.top_k)
        lines += [notes[i] for i in found if notes[i] not in lines]
    return lines


def _detect(
    sentences: list[Draft],
    state: EvidenceState,
    backend: ChatBackend,
    facts: dict[str, str],
    notes: list[str],
    settings: LoopSettings,
    grounding: GroundingScorer | None,
    context: str,
    source_spans: list[tuple[int, int]],
) -> None:
    for sentence in sentences:
        sentence.checks = check_cited_sentence(
            sentence.text, sentence.citations, state, free_text=True
        )
    prompts = [
        render(
            "prompts/entailment.txt.j2",
            sentence=sentence.text,
            evidence=_evidence_lines(sentence, facts, notes, settings),
        )
        for sentence in sentences
    ]

    schema = entailment_schema(settings.limits)

    def judge(prompt: str) -> dict[str, Any]:
        try:
            return _ask(backend, prompt, ["label"], schema, settings)
        except ModelOutputError:
            # No usable verdict: the sentence is not judged supported, so it stays flagged.
            return {"label": "unsupported", "spans": ["the model gave no usable verdict"]}

    for sentence, verdict in zip(
        sentences, in_parallel(judge, prompts, settings.concurrency), strict=True
    ):
        sentence.entailment = "supported" if verdict.get("label") == "supported" else "unsupported"
        sentence.spans = [str(span) for span in verdict.get("spans", []) if str(span).strip()]
        if sentence.entailment == "supported":
            sentence.spans = []
    if grounding is not None and sentences:
        summary = " ".join(sentence.text for sentence in sentences)
        spans, cursor = [], 0
        for sentence in sentences:
            start = summary.index(sentence.text, cursor)
            spans.append((start, start + len(sentence.text)))
            cursor = start + len(sentence.text)
        for sentence, score in zip(
            sentences, grounding(context, source_spans, summary, spans), strict=True
        ):
            sentence.grounding = score


def _low_grounding(sentence: Draft, settings: LoopSettings) -> bool:
    return sentence.grounding is not None and sentence.grounding < settings.tau


def _fix(
    flagged: list[Draft],
    backend: ChatBackend,
    facts: dict[str, str],
    notes: list[str],
    settings: LoopSettings,
) -> list[list[Draft]]:
    """Each flagged sentence rewritten (into none, one or several), one model call each."""
    prompts = [
        render(
            "prompts/fix.txt.j2",
            text=sentence.text,
            spans=sentence.spans
            + [span for check in sentence.checks if not check.passed for span in check.spans],
            evidence=_evidence_lines(sentence, facts, notes, settings),
        )
        for sentence in flagged
    ]
    schema = sentences_schema(settings.limits, list(facts), for_fix=True)

    def rewrite(prompt: str) -> dict[str, Any] | None:
        try:
            return _ask(backend, prompt, ["sentences"], schema, settings)
        except ModelOutputError:
            return None  # no usable fix: the sentence stays as it was, flagged

    answers = in_parallel(rewrite, prompts, settings.concurrency)
    return [
        [sentence]
        if answer is None
        else _drafts(answer, prompt, default_citations=sentence.citations)
        for sentence, answer, prompt in zip(flagged, answers, prompts, strict=True)
    ]


def _drafts(
    answer: dict[str, Any], prompt: str, default_citations: list[str] | None = None
) -> list[Draft]:
    """The sentences of a draft or fix answer, re-segmented (a model may write two in one),
    without meta text that restates the prompt (``pipeline.text.echoes``) or makes no clinical
    claim (``pipeline.checking.claims``): neither ever reaches the draft."""
    drafts = []
    for item in answer.get("sentences") or []:
        if not isinstance(item, dict) or not item.get("text"):
            continue
        cited = item.get("citations")
        citations = [str(c) for c in cited] if isinstance(cited, list) else default_citations or []
        drafts += [
            Draft(span.text, citations)
            for span in split_sentences(str(item["text"]))
            if span.kind != "header" and kept_in_draft(span.text, prompt)
        ]
    return drafts


def kept_in_draft(sentence: str, prompt: str) -> bool:
    """Whether a sentence the model wrote may reach the draft: not meta text restating the
    prompt, and a clinical claim (not a question, a fragment or text about the summary)."""
    return not restates_instructions(sentence, prompt) and claim_problem(sentence) is None


# What the course is told from, most relevant first: facts past the model's context window are
# left out from the end of this order (the course's own sentences, diagnoses and procedures
# stay; social history goes first).
COURSE_RELEVANCE: tuple[SectionKey, ...] = (
    "hospital_course",
    "diagnoses",
    "procedures",
    "results",
    "medications",
    "stay",
    "condition_at_discharge",
    "follow_up",
    "active_problems",
    "allergies",
    "pending_results",
    "social_history",
)


def fitted_facts(
    backend: ChatBackend,
    facts: list[dict[str, str]],
    notes: list[dict[str, str]],
    answer_tokens: int,
) -> list[dict[str, str]]:
    """The facts, most relevant first, that fit the draft prompt in the model's context window
    with room for its answer (a quarter of the window at least). A backend that does not say
    its window (``context_tokens``) or cannot count (``count_tokens``) gets them all."""
    counter = token_counter(backend)
    if counter is None:
        return facts
    window, count = counter
    room = window - min(answer_tokens, window // 4)
    kept = list(facts)
    while kept:
        if count(render("prompts/draft.txt.j2", facts=kept, notes=notes)) <= room:
            break
        kept = kept[: len(kept) - max(1, len(kept) // 10)]
    return kept


@dataclass(frozen=True, slots=True)
class _DraftInputs:
    """What the draft agent is given: the citable texts by id, the course's note sentences (what
    the entailment judge reads beside the facts), and the prompt with its source span."""

    facts: dict[str, str]
    notes: list[str]
    schema: dict[str, Any]
    prompt: str


def _draft_inputs(
    state: EvidenceState, base: Summary, backend: ChatBackend, settings: LoopSettings
) -> _DraftInputs:
    by_relevance = sorted(
        (section for section in base.sections if section.key in COURSE_RELEVANCE),
        key=lambda section: COURSE_RELEVANCE.index(section.key),
    )
    facts = {
        fact_id: sentence.text
        for section in by_relevance
        for sentence in section.sentences
        for fact_id in sentence.citations
    }
    # The note sentences FOCUS kept; the course told from the structured record is in ``facts``.
    course = [
        sentence
        for sentence in base.section(NARRATIVE).sentences
        if all(state.fact(c).category == "course" for c in sentence.citations)
    ]
    fact_items = [{"id": fact_id, "text": text} for fact_id, text in facts.items()]
    note_items = [{"id": sentence.citations[0], "text": sentence.text} for sentence in course]
    answer_tokens = answer_budget(sentences_schema(settings.limits, list(facts)))
    fact_items = fitted_facts(backend, fact_items, note_items, answer_tokens)
    # The model may cite what it was given: the facts that fit, and the course's sentences.
    citable = {item["id"]: facts[item["id"]] for item in fact_items} | {
        item["id"]: item["text"] for item in note_items
    }
    return _DraftInputs(
        facts=citable,
        notes=[sentence.text for sentence in course],
        schema=sentences_schema(settings.limits, list(citable)),
        prompt=render("prompts/draft.txt.j2", facts=fact_items, notes=note_items),
    )


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
            flags.append(
                SentenceFlag(code="entailment", reason="; ".join(sentence.spans) or "unsupported")
            )
        if _low_grounding(sentence, settings):
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
    given = _draft_inputs(state, base, backend, settings)
    facts, notes, prompt = given.facts, given.notes, given.prompt
    source_spans = [(prompt.index("<data>"), len(prompt))]
    progress("drafting the hospital course")
    sentences = _drafts(_ask(backend, prompt, ["sentences"], given.schema, settings), prompt)
    decisions: list[str] = []
    previous: set[str] = set()
    previous_mean: float | None = None
    stop_reason = "budget"
    iteration = 0
    for iteration in range(1, settings.max_iterations + 1):
        progress(f"pass {iteration}: detecting {len(sentences)} sentences")
        _detect(sentences, state, backend, facts, notes, settings, grounding, prompt, source_spans)
        flagged = [s for s in sentences if s.flagged or _low_grounding(s, settings)]
        current = {s.text for s in flagged}
        scores = [s.grounding for s in sentences if s.grounding is not None]
        mean = sum(scores) / len(scores) if scores else None
        stop_reason = _stop_reason(iteration, current, previous, mean, previous_mean, settings)
        decisions.append(_decision(iteration, len(flagged), len(sentences), mean, stop_reason))
        if stop_reason:
            break
        progress(f"pass {iteration}: fixing {len(flagged)} sentences")
        fixes = dict(
            zip(map(id, flagged), _fix(flagged, backend, facts, notes, settings), strict=True)
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
