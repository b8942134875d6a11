"""The summary model: sections of sentences, each with its citations, checks and flags.

Every sentence cites facts of the evidence state (and through them SourceRefs). Section codes are
LOINC document-section codes, so the Composition built from a Summary is coded throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.evidence.model import EvidenceState, Fact, SourceRef

SectionKey = Literal[
    "stay",
    "diagnoses",
    "active_problems",
    "hospital_course",
    "procedures",
    "medications",
    "allergies",
    "results",
    "pending_results",
    "condition_at_discharge",
    "follow_up",
    "social_history",
    "needs_review",
]
Verdict = Literal["supported", "unsupported"]
# A hard check failing makes a sentence unsupported (a number, date, drug, dose, negation, age or
# sex the evidence does not hold); a soft one (content words the retrieved evidence lacks) only
# marks it weakly grounded: a faithful paraphrase uses words of its own.
Severity = Literal["hard", "soft"]
SOFT_CHECKS = frozenset({"terms", "denials"})
# What the reviewing physician did to a sentence still in the summary (deleted ones are gone).
ReviewMark = Literal["accepted", "edited"]
NOT_DOCUMENTED = "Not documented"


@dataclass(frozen=True, slots=True)
class SectionSpec:
    key: SectionKey
    title: str
    loinc: str
    loinc_display: str


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("needs_review", "Needs review", "48767-8", "Annotation comment"),
    SectionSpec("stay", "Patient and stay", "46240-8", "History of Hospitalizations"),
    SectionSpec("diagnoses", "Discharge diagnoses", "11535-2", "Hospital discharge Dx"),
    SectionSpec("procedures", "Procedures", "47519-4", "History of Procedures"),
    SectionSpec("active_problems", "Active problems", "11450-4", "Problem list - Reported"),
    SectionSpec("hospital_course", "Hospital course", "8648-8", "Hospital course"),
    SectionSpec(
        "medications", "Discharge medications", "10183-2", "Hospital discharge medications"
    ),
    SectionSpec("allergies", "Allergies", "48765-2", "Allergies and adverse reactions"),
    SectionSpec("results", "Key results", "30954-2", "Relevant diagnostic tests/laboratory data"),
    SectionSpec(
        "pending_results", "Pending results", "11493-4", "Hospital discharge studies summary"
    ),
    SectionSpec(
        "condition_at_discharge",
        "Condition at discharge",
        "10184-0",
        "Hospital discharge physical findings",
    ),
    SectionSpec("follow_up", "Follow-up", "18776-5", "Plan of care note"),
    SectionSpec("social_history", "Social history", "29762-2", "Social history Narrative"),
)
SECTION_SPECS = {spec.key: spec for spec in SECTIONS}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckResult(_Model):
    """One deterministic check of one sentence; ``spans`` are the failing parts of its text."""

    check: str
    passed: bool
    spans: list[str] = Field(default_factory=list)
    detail: str = ""
    # Drafts stored before checks had a severity read theirs from the check's name.
    severity: Severity = Field(
        default_factory=lambda data: "soft" if data["check"] in SOFT_CHECKS else "hard"
    )


def check_result(check: str, failing: Sequence[str], detail: str) -> CheckResult:
    """A check's result from its failing spans (each once): passed when there are none."""
    unique = list(dict.fromkeys(failing))
    return CheckResult(
        check=check, passed=not unique, spans=unique, detail=detail if unique else ""
    )


class ModelUsage(_Model):
    """What drafting asked of the language model: calls, and tokens where the server told."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Completion tokens of answers that could not be used whole (cut by their budget or by the
    # loop guard, or unparseable) and were salvaged or asked again.
    wasted_tokens: int = 0


def hard_verdict(checks: Sequence[CheckResult]) -> Verdict:
    """Unsupported when a hard check fails; soft signals never decide it."""
    hard = (check for check in checks if check.severity == "hard")
    return "supported" if all(check.passed for check in hard) else "unsupported"


class SentenceFlag(_Model):
    code: str
    reason: str


class Sentence(_Model):
    id: str
    section: SectionKey
    text: str
    citations: list[str]
    grounding: float | None = None
    entailment: Verdict | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    flags: list[SentenceFlag] = Field(default_factory=list)
    revisions: list[str] = Field(default_factory=list)
    review: ReviewMark | None = None

    @property
    def verdict(self) -> Verdict:
        return hard_verdict(self.checks)

    @property
    def weakly_grounded(self) -> bool:
        return any(not check.passed for check in self.checks if check.severity == "soft")

    @property
    def flagged(self) -> bool:
        return bool(self.flags) or self.verdict == "unsupported" or self.weakly_grounded

    def states(self, reason: str) -> bool:
        """Whether a "Needs review" sentence, written from its flags, already says ``reason``
        (every part of it), so that a flag's text is printed once, not twice."""
        if self.section != "needs_review":
            return False
        text = self.text.lower()
        return all(part.strip().lower() in text for part in reason.rstrip(".").split(": "))

    def review_reasons(self) -> str:
        """Why the sentence needs review, for people: its flags, then its failed checks; what
        the sentence itself states is not said again."""
        reasons = [flag.reason for flag in self.flags if not self.states(flag.reason)]
        reasons += [
            ("weak grounding: " if check.severity == "soft" else "")
            + (f"{check.detail}: {', '.join(check.spans)}" if check.spans else check.detail)
            for check in self.checks
            if not check.passed
        ]
        return "; ".join(reasons)

    @property
    def awaiting_review(self) -> bool:
        """Flagged, and not yet accepted as it stands: what blocks the physician's signature."""
        return self.flagged and self.review != "accepted"


class SummarySection(_Model):
    key: SectionKey
    sentences: list[Sentence] = Field(default_factory=list)
    empty_reason: str | None = None
    # Empty, and named in Needs review's one "Not documented" line: the draft's text folds it
    # there instead of printing its heading over "Not documented" (the FHIR section keeps its
    # emptyReason).
    named_in_needs_review: bool = False

    @property
    def spec(self) -> SectionSpec:
        return SECTION_SPECS[self.key]


class Summary(_Model):
    patient: str
    encounter: str | None
    sections: list[SummarySection]
    backend: str
    backend_version: str
    iterations: int = 1
    stop_reason: str = "evidence-only: rendered from facts, nothing to revise"
    decisions: list[str] = Field(default_factory=list)
    model_usage: ModelUsage | None = None
    # Why a model was configured but this draft is evidence-only (the model could not be used).
    model_unavailable: str | None = None

    def sentences(self) -> list[Sentence]:
        return [sentence for section in self.sections for sentence in section.sentences]

    def section(self, key: SectionKey) -> SummarySection:
        for section in self.sections:
            if section.key == key:
                return section
        raise KeyError(key)


def cited_facts_and_sources(
    sentence: Sentence, state: EvidenceState
) -> list[tuple[Fact, SourceRef]]:
    """The distinct sources behind a sentence's citations, in citation order, each with the
    fact that cites it."""
    refs: dict[tuple[str, str, int | None], tuple[Fact, SourceRef]] = {}
    for fact_id in sentence.citations:
        fact = state.fact(fact_id)
        for ref in fact.sources:
            refs.setdefault((ref.resource, ref.path, ref.start), (fact, ref))
    return list(refs.values())


def cited_sources(sentence: Sentence, state: EvidenceState) -> list[SourceRef]:
    """The distinct sources behind a sentence's citations, in citation order."""
    return [ref for _, ref in cited_facts_and_sources(sentence, state)]
