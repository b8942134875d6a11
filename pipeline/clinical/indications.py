"""Where the rules of ``indicated_therapy`` read an indication from the record: the episode's
diagnoses, procedures and the stay's reasons (the problem list and the patient's devices too,
for a condition or an implant that lasts for life), and the notes' statements that name a
companion condition, each term with the fact that records it."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.episode_diagnoses import implied_treatments
from pipeline.clinical.tables import names_it
from pipeline.evidence.model import (
    DeviceAttributes,
    DiagnosisAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    NarrativeAttributes,
    ProcedureAttributes,
    attributes_as,
)
from pipeline.text.rendering import plain_term

# Where an indication may be read: what the stay was for and what was done in it (a rule whose
# condition lasts for life, a transplant, reads the problem list too: ``problem_list``).
_EPISODE_LISTINGS = frozenset({"principal", "episode"})


def note_mentions(state: EvidenceState, rule: dict[str, Any]) -> list[tuple[Fact, str]]:
    """The notes' statements of conditions and habits that name one of a rule's ``keywords``
    and none of its ``notes`` words ("denies", "family history": a note's words are not a coded
    term), each with the keyword it names."""
    found = []
    for fact in [*state.facts["condition_statement"], *state.facts["social_statement"]]:
        said = f" {attributes_as(fact, NarrativeAttributes).text.lower()} "
        named = next((k for k in rule["keywords"] if k in said), None)
        if named and not any(word in said for word in rule["notes"]):
            found.append((fact, named))
    return found


def indication_terms(
    state: EvidenceState, with_problem_list: bool, with_devices: bool = False
) -> list[tuple[Fact, str]]:
    """The clinical terms an indication may be read from, each with its fact (the patient's
    devices too, for a rule about an implant that stays for life)."""
    found: list[tuple[Fact, str]] = []
    listings = _EPISODE_LISTINGS | ({"active"} if with_problem_list else set())
    for fact in state.facts["diagnosis"]:
        diagnosis = fact.attributes
        if isinstance(diagnosis, DiagnosisAttributes) and (diagnosis.listing in listings):
            found.append((fact, diagnosis.display))
    found += [
        (fact, attributes_as(fact, ProcedureAttributes).name) for fact in state.facts["procedure"]
    ]
    for fact in state.facts["encounter"]:
        encounter = attributes_as(fact, EncounterAttributes)
        if encounter.kind == "stay":
            found += [(fact, reason) for reason in encounter.reasons]
    if with_devices:
        found += [
            (fact, fact.attributes.name)
            for fact in state.facts["device"]
            if isinstance(fact.attributes, DeviceAttributes) and fact.attributes.kind == "device"
        ]
    return found


def indication(state: EvidenceState, rule: dict[str, Any]) -> list[tuple[Fact, str]]:
    """The terms that name the rule's indication; a treatment the record implies only where its
    "History of" term does not name it already."""
    terms = indication_terms(state, rule.get("problem_list", False), rule.get("devices", False))
    found = [(f, term) for f, term in terms if names_it(term, rule)]
    named = {f.id for f, _ in found}
    implied = [(t.fact, t.name) for t in implied_treatments(state)]
    return found + [(f, t) for f, t in implied if f.id not in named and names_it(t, rule)]


def named_terms(indications: list[tuple[Fact, str]]) -> str:
    return "; ".join(dict.fromkeys(plain_term(term) for _, term in indications))


def with_companion(
    state: EvidenceState, indications: list[tuple[Fact, str]], companion: dict[str, Any]
) -> list[tuple[Fact, str]]:
    """The indications with the companion condition that a rule's ``only_with`` asks for, read
    from the problem list (and the notes' statements, with ``notes``), or none without it."""
    alongside = [(f, t) for f, t in indication_terms(state, True) if names_it(t, companion)]
    if "notes" in companion:
        # The line names the finding ("opioid named in the notes"), not the sentence.
        alongside += [
            (f, f"{named} named in the notes") for f, named in note_mentions(state, companion)
        ]
    return indications + alongside if alongside else []
