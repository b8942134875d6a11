"""The stay and its diagnoses: who, when, why, the principal and episode diagnoses, the active
problems and the social history."""

from __future__ import annotations

import re
from typing import Any

from pipeline.evidence.model import (
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    attributes_as,
)
from pipeline.evidence.summary import (
    Sentence,
)
from pipeline.summarizing.sections.common import cited_sentence

# A note's line that only restates who the patient is ("Ana is a 65 year-old hispanic female.")
# belongs to the header, which says it from the record; templated notes repeat it in every note.
DEMOGRAPHIC_LINE = re.compile(
    r"^[\w'’.-]+(?: [\w'’.-]+){0,3} is an? \d{1,3}[- ]year[- ]old\b[^.;:]*\.?$", re.IGNORECASE
)

# A templated chief complaint that says nothing ("No complaints.") is not a complaint.
NOTHING_SAID = frozenset({"no complaints", "no complaint", "none", "n/a", "not applicable"})


def stay_section(state: EvidenceState, render: Any) -> list[Sentence]:
    sentences = []
    # Each complaint once, however many notes state it, and all of them on one line.
    complaints: dict[str, Fact] = {}
    for fact in state.facts["patient_info"]:
        sentences.append(cited_sentence("stay", render.patient(fact.attributes), [fact.id]))
    for fact in state.facts["encounter"]:
        stay = fact.attributes
        assert isinstance(stay, EncounterAttributes)
        if stay.kind == "chief_complaint":
            said = (stay.text or "").strip()
            if said.lower().rstrip(".") not in NOTHING_SAID:
                complaints.setdefault(said.lower(), fact)
            continue
        sentences.append(cited_sentence("stay", render.stay(stay), [fact.id]))
        if stay.reasons:
            sentences.append(cited_sentence("stay", render.reasons(stay), [fact.id]))
        if stay.attending:
            sentences.append(cited_sentence("stay", render.attending(stay), [fact.id]))
        if stay.discharge_disposition:
            sentences.append(cited_sentence("stay", render.disposition(stay), [fact.id]))
    if complaints:
        cited = [f.id for f in complaints.values()]
        said_once = [
            (attributes_as(f, EncounterAttributes).text or "").strip() for f in complaints.values()
        ]
        text = render.chief_complaints(said_once)
        sentences.append(cited_sentence("stay", text, cited))
    return sentences


def _listed(state: EvidenceState, *listings: str) -> list[Fact]:
    """Diagnosis facts of these listings (pipeline.clinical.diagnoses), in the order given, then by
    onset: never alphabetical."""
    facts = [
        f
        for f in state.facts["diagnosis"]
        if isinstance(f.attributes, DiagnosisAttributes)
        and (f.attributes.listing or "episode") in listings
    ]
    return sorted(
        facts,
        key=lambda f: (
            listings.index(attributes_as(f, DiagnosisAttributes).listing or "episode"),
            attributes_as(f, DiagnosisAttributes).onset is None,
            attributes_as(f, DiagnosisAttributes).onset,
        ),
    )


def diagnoses_section(state: EvidenceState, render: Any) -> list[Sentence]:
    """The principal diagnosis first, then the diagnoses that began in the episode."""
    return [
        cited_sentence(
            "diagnoses", render.diagnosis(f.attributes), [f.id, *_status_post_of(state, f)]
        )
        for f in _listed(state, "principal", "episode")
    ]


def _status_post_of(state: EvidenceState, fact: Fact) -> list[str]:
    """The procedure a "Status post" line names, to cite beside the diagnosis."""
    diagnosis = attributes_as(fact, DiagnosisAttributes)
    return [
        f.id
        for f in state.facts["procedure"]
        if diagnosis.status_post is not None
        and attributes_as(f, ProcedureAttributes).name == diagnosis.status_post
        and attributes_as(f, ProcedureAttributes).performed_start == diagnosis.status_post_on
    ]


def active_problems_section(state: EvidenceState, render: Any) -> list[Sentence]:
    return [
        cited_sentence("active_problems", render.problem(f.attributes), [f.id])
        for f in _listed(state, "active")
    ]


def social_history_section(state: EvidenceState, render: Any) -> list[Sentence]:
    """One short line: social findings are context, not diagnoses."""
    facts = _listed(state, "social")
    if not facts:
        return []
    text = render.social([f.attributes for f in facts])
    return [cited_sentence("social_history", text, [f.id for f in facts])]
