"""The evidence-only summarizer: a discharge summary rendered from facts, no language model.

Every sentence is rendered by a template (``templates/summary/sentences.txt.j2``) from the facts it
cites, or quoted verbatim from a note, so it can state nothing the evidence does not hold. What is
computed is computed here in code: medication changes (by :mod:`pipeline.clinical.reconcile`),
result trends (first → last, and the latest value before admission), result flags against reference
ranges (:mod:`pipeline.clinical.results`), and the hospital course's selection by FOCUS.
"""

from __future__ import annotations

from typing import Any

from pipeline.checking.checker import check_summary_sentences
from pipeline.clinical.episode_diagnoses import listed
from pipeline.clinical.screening import positive_screens
from pipeline.clinical.tables import table
from pipeline.evidence.model import (
    EncounterAttributes,
    EvidenceState,
    Fact,
    FactCategory,
)
from pipeline.evidence.summary import (
    NOT_DOCUMENTED,
    SECTIONS,
    SectionKey,
    Sentence,
    Summary,
    SummarySection,
)
from pipeline.settings import PipelineSettings
from pipeline.summarizing.focus import TokenSalience
from pipeline.summarizing.sections.common import cited_sentence, record_begins_after_stay
from pipeline.summarizing.sections.condition_at_discharge import condition_at_discharge_section
from pipeline.summarizing.sections.course import (
    hospital_course_section,
    structured_course_section,
)
from pipeline.summarizing.sections.diagnoses import diagnoses_section
from pipeline.summarizing.sections.follow_up import follow_up_section
from pipeline.summarizing.sections.medications import allergies_section, medications_section
from pipeline.summarizing.sections.needs_review import needs_review_section
from pipeline.summarizing.sections.pain_relief import post_operative_pain_relief
from pipeline.summarizing.sections.procedures import procedures_section
from pipeline.summarizing.sections.results import results_section
from pipeline.summarizing.sections.screening import screening_hand_over, screening_results
from pipeline.summarizing.sections.stay import (
    active_problems_section,
    social_history_section,
    stay_section,
)
from pipeline.text.rendering import macros

BACKEND = "provenote-evidence-only"
BACKEND_VERSION = "1"


def _simple(
    state: EvidenceState, category: FactCategory, section: SectionKey, macro: Any
) -> list[Sentence]:
    return [cited_sentence(section, macro(f.attributes), [f.id]) for f in state.facts[category]]


def _pending_results(state: EvidenceState, render: Any, stay: Fact | None) -> list[Sentence]:
    """Each result still awaited, or that the record holds none: its reports and test orders
    were read (``fhir_mapping.results``, ``fhir_mapping.awaited_tests``), so an empty list says no
    test awaits its result, which "Not documented" did not (readers asked for it)."""
    pending = _simple(state, "pending_result", "pending_results", render.pending)
    if pending or stay is None:
        return pending
    return [cited_sentence("pending_results", render.none_pending(), [stay.id])]


# Sections whose facts the record dates: empty because the record starts later, it says so.
_DATED_SECTIONS: dict[SectionKey, tuple[str, str]] = {
    "procedures": ("procedure", "procedures"),
    "results": ("lab_result", "laboratory results"),
}


def _empty_reason(
    key: SectionKey, state: EvidenceState, render: Any, social_shown: bool = False
) -> str:
    """ "Not documented", or that the available record holds none before discharge. Its first
    one's date is never said: a discharge summary states nothing dated after discharge, and
    readers read that date as noise."""
    if key == "social_history" and (state.facts["social_statement"] or listed(state, "social")):
        # The record holds social history, none of it bearing on discharge: "Not documented"
        # was read as contradicting the note's Social History section.
        return str(render.no_social_history_bearing())
    own = listed(state, "principal") or listed(state, "episode")
    if key == "active_problems" and own:
        # The list holds only this stay's own diagnoses (a ligation's "History of", coded that
        # day): two readers read "Not documented: Active problems" as contradicting the chart.
        # Beside social findings that Social history shows (an alcohol use), a bare "none
        # besides" read to two paired readers as a list called complete that is not, and "Not
        # documented" to two later ones as wrong: the line names where those findings are.
        return str(render.no_other_active_problem(social_shown))
    kind, what = _DATED_SECTIONS.get(key, ("", ""))
    if not record_begins_after_stay(state, kind):
        return NOT_DOCUMENTED
    return str(render.record_starts_later(what))


def _nothing_to_review(checked: dict[SectionKey, list[Sentence]], render: Any) -> str:
    """An empty Needs review says so, but never that nothing is flagged beside a line flagged
    on its own (a treatment the record implies, on the principal diagnosis's line): two readers
    read "No line of this draft is flagged for review" above such a line as the draft
    contradicting itself. "Not documented" here had read as if the review itself were missing."""
    flagged = [(spec.title, sum(s.flagged for s in checked[spec.key])) for spec in SECTIONS]
    titles = [title for title, count in flagged if count]
    if not titles:
        return str(render.nothing_flagged())
    return str(render.flagged_on_lines(titles, sum(count for _, count in flagged)))


def _empty_reasons(
    built: dict[SectionKey, list[Sentence]], state: EvidenceState, render: Any
) -> dict[SectionKey, str]:
    """Each empty section's reason, read once: for the Needs review line and for the section."""
    social = {f.id for f in listed(state, "social")}
    shown = any(social & set(s.citations) for s in built["social_history"])
    return {
        key: _empty_reason(key, state, render, shown) for key, lines in built.items() if not lines
    }


def _stay_fact(state: EvidenceState) -> Fact | None:
    """The stay's own encounter fact: what the stay-wide lines cite."""
    return next(
        (
            f
            for f in state.facts["encounter"]
            if isinstance(f.attributes, EncounterAttributes) and f.attributes.kind == "stay"
        ),
        None,
    )


def _sections(
    state: EvidenceState, render: Any, stay: Fact | None, settings: PipelineSettings
) -> dict[SectionKey, list[Sentence]]:
    """Every section but Needs review, each from its rules and the deployment's tables; of the
    hospital course, its structured lines (FOCUS's selection from the notes follows them)."""
    routine = table("routine_procedures", settings)
    implant_table = table("implants", settings)
    equipment = table("home_equipment", settings)
    organs = table("transplant_organs", settings)
    relevant = table("relevant_history", settings)
    screens = positive_screens(state, table("screening_scores", settings))
    return {
        "stay": stay_section(state, render),
        "diagnoses": diagnoses_section(
            state,
            render,
            (routine, implant_table, organs, relevant, table("diagnosis_specifics", settings)),
            stay,
        ),
        "active_problems": active_problems_section(
            state,
            render,
            (
                table("chronic_conditions", settings),
                table("regimen_risks", settings),
                relevant,
                table("problem_measures", settings),
            ),
        ),
        "social_history": social_history_section(
            state, render, (table("social_findings", settings), table("screening_scores", settings))
        ),
        "hospital_course": structured_course_section(state, render, (routine, equipment), stay),
        "condition_at_discharge": condition_at_discharge_section(state, render, stay),
        "procedures": procedures_section(state, render, (routine, implant_table), stay),
        "medications": medications_section(state, render)
        + post_operative_pain_relief(
            state, render, (routine, table("drug_classes", settings), table("pain_plan", settings))
        ),
        "allergies": allergies_section(state, render),
        "results": results_section(
            state,
            render,
            (table("reference_ranges", settings), routine, organs),
            stay,
            screening_results(screens, render),
        ),
        "pending_results": _pending_results(state, render, stay),
        "follow_up": follow_up_section(
            state, render, (equipment, routine, table("condition_follow_up", settings), organs)
        )
        + screening_hand_over(state, screens, render),
    }


def summarize_evidence(
    state: EvidenceState,
    *,
    ratio: float = 0.5,
    salience: TokenSalience | None = None,
    settings: PipelineSettings,
) -> Summary:
    """The evidence-only discharge summary of a validated evidence state, checked, under the
    deployment's settings (its clinical tables among them: never defaults in their place)."""
    render = macros("summary/sentences.txt.j2")
    stay = _stay_fact(state)
    stay_fact = stay.id if stay is not None else None
    built = _sections(state, render, stay, settings)
    built["hospital_course"] += hospital_course_section(state, salience, ratio, render)
    empty = _empty_reasons(built, state, render)
    undocumented = [spec.key for spec in SECTIONS if empty.get(spec.key) == NOT_DOCUMENTED]
    built["needs_review"] = needs_review_section(state, render, stay_fact, undocumented)
    checked = {spec.key: check_summary_sentences(built[spec.key], state) for spec in SECTIONS}
    if not checked["needs_review"]:
        empty["needs_review"] = _nothing_to_review(checked, render)
    folded = set(undocumented) if stay_fact else set()
    sections = [
        SummarySection(
            key=spec.key,
            sentences=checked[spec.key],
            empty_reason=empty.get(spec.key),
            named_in_needs_review=spec.key in folded,
        )
        for spec in SECTIONS
    ]
    return Summary(
        patient=state.patient,
        encounter=state.encounter,
        sections=sections,
        backend=BACKEND,
        backend_version=BACKEND_VERSION,
    )
