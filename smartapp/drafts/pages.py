"""What the review page shows beside the sentences: the flags and their progress, each
citation's label, the draft's sections, and the patient banner."""

from __future__ import annotations

from typing import Any

from pipeline.checking.review import review_items, review_progress
from pipeline.evidence.model import EvidenceState, PatientInfoAttributes
from pipeline.evidence.summary import Sentence, Summary
from smartapp.drafts.sources import citations

# The header the page's script sends, and what it asks for in answer to an action.
PARTIAL_HEADER = "x-requested-with"
SENTENCE_UPDATE = "provenote-sentence"
REVIEW_UPDATE = "provenote-review"
SOURCE_FRAGMENT = "provenote-source"
SIGN_PREVIEW = "provenote-sign"
REVIEW_NOTES = "needs_review"


def workspace_values(
    summary: Summary, state: EvidenceState, drafted: dict[str, Sentence]
) -> dict[str, Any]:
    """The review workspace's view of a draft: the one "Needs review" list (the draft's own
    review notes in full, then every other sentence that was flagged), the remaining sections,
    the progress through the flags and each sentence's labelled citations."""
    progress = review_progress(summary, drafted)
    flagged = set(progress.flagged)
    notes = [s for s in summary.sections if s.key == REVIEW_NOTES]
    return {
        "summary": summary,
        "progress": progress,
        "review_notes": [sentence for section in notes for sentence in section.sentences],
        "flagged_elsewhere": [
            s for s in summary.sentences() if s.id in flagged and s.section != REVIEW_NOTES
        ],
        "draft_sections": [s for s in summary.sections if s.key != REVIEW_NOTES],
        "citations": citations(summary, state),
        "review_items": review_items,
    }


def patient_banner(state: EvidenceState) -> PatientInfoAttributes | None:
    for fact in state.facts.get("patient_info", []):
        if isinstance(fact.attributes, PatientInfoAttributes):
            return fact.attributes
    return None
