"""The fact checker: deterministic checks of each summary sentence against the evidence.

Used by every summarizer backend. For a sentence it checks that

- ``numbers``: every number (with its unit, if any) appears in the evidence, compared after
  normalising ("10mg" = "10 mg" = "0.01 g");
- ``dates``: every date appears in the evidence ("2024-01-03" = "Jan 3, 2024" = "01/03/2024");
- ``drugs``: every drug or allergen named exists in the evidence;
- ``negation``: a finding the sentence asserts is not only ever denied in the evidence ("fever"
  where the evidence says "denies fever"; in a dialogue, a question answered "no" denies);
- ``denials`` (soft): the reverse, a word the sentence denies that the evidence only asserts.
  Measured on MTS-Dialog, most such flags fell on words a negation's scope happens to reach
  ("denies current alcohol use" against "I use…"), so it marks weak grounding, not unsupported;
- ``demographics``: an age or sex the sentence states is in the evidence;
- ``citations``: every cited fact exists (structured mode);
- ``terms`` (free text): every content word is in the retrieved evidence (stemmed). This one is
  **soft**: a faithful paraphrase uses words of its own ("prescribed" for "discharge medications
  include"), so a failure marks the sentence weakly grounded for the physician and never makes it
  unsupported; the hard checks above do (``pipeline.evidence.summary.Severity``).

Numbers and dates are checked against the sentence's own evidence (its citations, or the source
sentences retrieved for it); drugs and demographics against all the evidence.

The MA-RAG metrics: numeric precision is supported numeric mentions (numbers and dates) over all
numeric mentions; the numeric hallucination rate is the share of sentences holding a numeric
mention that hold at least one unsupported one. With no numeric mention at all they are 1 and 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from pipeline.checking.certainty import check_certainty, check_disease_class
from pipeline.checking.claims import check_claim
from pipeline.checking.evidence_text import Evidence, FactIndex
from pipeline.checking.mentions import find_dates, find_numbers
from pipeline.checking.sentence_checks import (
    check_citations,
    check_dates,
    check_demographics,
    check_denials,
    check_drugs,
    check_negation,
    check_numbers,
    check_terms,
    drug_lexicon,
)
from pipeline.clinical.record_conflicts import check_record
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import CheckResult, Sentence, Verdict, hard_verdict

# The checker's vocabulary, one import away for the loop, the review and the tests.
__all__ = [
    "Evidence",
    "FactIndex",
    "SentenceReport",
    "VerificationReport",
    "check_cited_sentence",
    "check_dates",
    "check_demographics",
    "check_denials",
    "check_drugs",
    "check_free_sentence",
    "check_negation",
    "check_numbers",
    "check_summary_sentences",
    "check_terms",
    "drug_lexicon",
    "numeric_metrics",
    "report_of",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SentenceReport(_Model):
    text: str
    verdict: Verdict
    # A soft check failed: words the evidence lacks, for the physician to look at.
    weakly_grounded: bool
    spans: list[str]
    checks: list[CheckResult]


class VerificationReport(_Model):
    sentences: list[SentenceReport]
    numeric_precision: float
    hallucination_rate: float


def check_cited_sentence(
    text: str,
    citations: Sequence[str],
    state: EvidenceState,
    *,
    free_text: bool = False,
    against_record: bool = True,
    index: FactIndex | None = None,
    rendered: bool = False,
) -> list[CheckResult]:
    """All checks of one summary sentence against its cited facts and the whole state; with
    ``against_record``, also against what the structured record says (a Needs review line,
    which quotes a conflict in order to report it, is not). ``index``: the state's, when many
    sentences of one state are checked. A ``rendered`` sentence (written by the evidence-only
    summarizer from facts, or quoted from a note) is not checked for denials: its "no" is the
    template's ("no discharge order"), and the soft check would only tell the physician noise."""
    index = index or FactIndex.of_state(state)
    cited = index.cited(citations)
    checks = [
        check_numbers(text, cited),
        check_dates(text, cited),
        check_drugs(text, index.whole, absence_said=rendered),
        check_negation(text, cited),
        *([] if rendered else [check_denials(text, cited)]),
        check_demographics(text, index.whole),
        check_certainty(text, cited.joined),
        check_disease_class(text, cited.joined),
        check_citations(citations, index.facts),
    ]
    if against_record:
        checks.append(check_record(text, state))
    if free_text:
        checks += [check_terms(text, cited), check_claim(text)]
    return checks


def check_free_sentence(
    text: str, retrieved: Evidence, whole: Evidence, meaning: CheckResult | None = None
) -> list[CheckResult]:
    """Checks of a sentence with no citations: the content words against what was retrieved for
    it; the rest against the whole source (a dialogue's answer may be far from the question);
    ``meaning``, the claim verifier's check, where it was run."""
    return [
        check_numbers(text, whole),
        check_dates(text, whole),
        check_drugs(text, whole),
        check_negation(text, whole),
        check_denials(text, whole),
        check_demographics(text, whole),
        check_certainty(text, whole.joined),
        check_disease_class(text, whole.joined),
        check_claim(text),
        check_terms(text, retrieved),
        *([meaning] if meaning is not None else []),
    ]


def numeric_metrics(
    texts: Sequence[str], reports: Sequence[Sequence[CheckResult]]
) -> tuple[float, float]:
    """(numeric precision, numeric hallucination rate) over sentences and their checks."""
    mentions = unsupported = numeric_sentences = hallucinating = 0
    for text, checks in zip(texts, reports, strict=True):
        count = len(find_numbers(text)) + len(find_dates(text))
        if not count:
            continue
        failed = sum(len(check.spans) for check in checks if check.check in {"numbers", "dates"})
        mentions += count
        unsupported += min(failed, count)
        numeric_sentences += 1
        hallucinating += failed > 0
    precision = 1.0 if not mentions else (mentions - unsupported) / mentions
    rate = 0.0 if not numeric_sentences else hallucinating / numeric_sentences
    return precision, rate


def report_of(texts: Sequence[str], checks: Sequence[list[CheckResult]]) -> VerificationReport:
    sentences = [
        SentenceReport(
            text=text,
            verdict=hard_verdict(sentence_checks),
            weakly_grounded=any(not c.passed for c in sentence_checks if c.severity == "soft"),
            spans=list(dict.fromkeys(s for c in sentence_checks for s in c.spans)),
            checks=sentence_checks,
        )
        for text, sentence_checks in zip(texts, checks, strict=True)
    ]
    precision, rate = numeric_metrics(texts, checks)
    return VerificationReport(
        sentences=sentences, numeric_precision=precision, hallucination_rate=rate
    )


def check_summary_sentences(sentences: Sequence[Sentence], state: EvidenceState) -> list[Sentence]:
    """The sentences the evidence-only summarizer rendered, with their checks filled in (the
    state indexed once for all of them)."""
    index = FactIndex.of_state(state)
    return [
        sentence.model_copy(
            update={
                "checks": check_cited_sentence(
                    sentence.text,
                    sentence.citations,
                    state,
                    against_record=sentence.section != "needs_review",
                    index=index,
                    rendered=True,
                )
            }
        )
        for sentence in sentences
    ]
