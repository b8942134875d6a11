"""Validation of the evidence state: the safety rules that no summary may bypass.

- Every fact has provenance, and every quote is found verbatim at its offsets; otherwise the fact
  is rejected (kept with its reason in ``rejected_facts``, never silently used or dropped).
- A category with no facts is a missing field, rendered "Not documented".
- A medication without dose, frequency or route, or whose phase is unknown, is flagged.
- Unreadable documents and pages are flagged, so nothing unread passes for "not documented".
"""

from __future__ import annotations

from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    FactCategory,
    MedicationAttributes,
    RejectedFact,
    ReviewFlag,
    SourceRef,
    group_facts,
    stable_id,
)

# Sections every discharge summary has, each with the categories of facts that fill it (a care
# plan is follow-up: "Follow-up not documented" above a care plan's line contradicts it; a
# note's medication list documents medications, even "No Active Medications"); an empty one
# reads "Not documented", never blank.
REQUIRED_CATEGORIES: dict[FactCategory, tuple[FactCategory, ...]] = {
    "diagnosis": ("diagnosis",),
    "medication": ("medication", "medication_list"),
    "allergy": ("allergy",),
    "procedure": ("procedure",),
    "lab_result": ("lab_result",),
    "pending_result": ("pending_result",),
    "follow_up": ("follow_up", "care_plan"),
}


def quote_problem(state: EvidenceState, ref: SourceRef) -> str | None:
    """Why a text SourceRef does not hold, or None when its quote is at its offsets."""
    if not ref.is_text:
        return None
    assert ref.document is not None and ref.page is not None
    assert ref.start is not None and ref.end is not None
    try:
        page = state.document(ref.document).page(ref.page)
    except KeyError as error:
        return f"quote source not found: {error.args[0]}"
    if page.text[ref.start : ref.end] != ref.quote:
        return f"quote not found at {ref.document} page {ref.page} [{ref.start}:{ref.end}]"
    return None


def rejection_reason(state: EvidenceState, fact: Fact) -> str | None:
    if not fact.sources:
        return "no provenance: the fact cites no source"
    for ref in fact.sources:
        problem = quote_problem(state, ref)
        if problem:
            return problem
    return None


def _medication_flags(facts: list[Fact], unconfirmed: set[str]) -> list[ReviewFlag]:
    """Orders that go home without a complete dosage, or that cannot be placed in the stay
    (neither given in it nor orders to confirm, which have their own flag)."""
    flags = []
    for fact in facts:
        attributes = fact.attributes
        if not isinstance(attributes, MedicationAttributes) or attributes.phase == "inpatient":
            continue
        if fact.id in unconfirmed:
            continue
        missing = [
            label
            for label, value in (
                ("dose", attributes.dose),
                # "as needed" is the frequency of a PRN order.
                ("frequency", attributes.frequency or attributes.as_needed),
                ("route", attributes.route),
            )
            if not value
        ]
        if missing:
            flags.append(
                ReviewFlag.on_facts(
                    ("incomplete",),
                    "incomplete_medication",
                    f"{attributes.name}: {', '.join(missing)} not documented",
                    "validate",
                    [fact.id],
                )
            )
        if attributes.phase == "unknown":
            flags.append(
                ReviewFlag.on_facts(
                    ("phase",),
                    "medication_phase_unknown",
                    f"{attributes.name}: {attributes.phase_rule}",
                    "validate",
                    [fact.id],
                )
            )
    return flags


def _document_flags(state: EvidenceState) -> list[ReviewFlag]:
    flags = []
    for document in state.documents:
        name = document.title or document.id
        if document.identity is not None and document.other_patient:
            flags.append(
                ReviewFlag(
                    id=stable_id("flag", "identity", document.id),
                    code="wrong_patient_document",
                    reason=f"{name}: {document.identity.reason}; it is not used as evidence",
                    raised_by="validate",
                    document=document.id,
                )
            )
            continue
        for error in document.errors:
            flags.append(
                ReviewFlag(
                    id=stable_id("flag", "document", document.id, error),
                    code="document_error",
                    reason=f"{name}: {error}",
                    raised_by="validate",
                    document=document.id,
                )
            )
        for page in document.pages:
            if not page.has_text:
                flags.append(
                    ReviewFlag(
                        id=stable_id("flag", "page", document.id, page.number),
                        code="page_unread",
                        reason=f"{name} page {page.number} was not read: {page.error or 'no text'}",
                        raised_by="validate",
                        document=document.id,
                    )
                )
    return flags


def validate(state: EvidenceState) -> tuple[EvidenceState, str, bool]:
    """Apply the safety rules; the flag says whether facts were rejected (so the loop goes on)."""
    kept: list[Fact] = []
    rejected = list(state.rejected_facts)
    newly_rejected = 0
    for fact in state.all_facts():
        reason = rejection_reason(state, fact)
        if reason is None:
            kept.append(fact)
        else:
            rejected.append(RejectedFact(fact=fact, reason=reason))
            newly_rejected += 1
    grouped = group_facts(kept)
    missing = [
        category
        for category, filled_by in REQUIRED_CATEGORIES.items()
        if not any(grouped[kind] for kind in filled_by)
    ]
    rejection_flags = [
        ReviewFlag(
            id=stable_id("flag", "rejected", item.fact.id),
            code="fact_rejected",
            reason=f"{item.fact.category} fact {item.fact.id} rejected: {item.reason}",
            raised_by="validate",
            fact_ids=[item.fact.id],
        )
        for item in rejected
    ]
    flags = [flag for flag in state.flags_for_review if flag.raised_by != "validate"]
    unconfirmed = set(state.medications.unconfirmed())
    flags += _medication_flags(kept, unconfirmed) + _document_flags(state) + rejection_flags
    updated = state.model_copy(
        update={
            "facts": grouped,
            "rejected_facts": rejected,
            "missing_fields": missing,
            "flags_for_review": flags,
        }
    )
    detail = (
        f"{len(kept)} facts valid, {newly_rejected} rejected, "
        f"{len(missing)} categories not documented"
    )
    return updated, detail, newly_rejected > 0
