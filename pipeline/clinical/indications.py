"""Where the rules of ``indicated_therapy`` read an indication from the record: the episode's
diagnoses, procedures and the stay's reasons (the problem list and the patient's devices too,
for a condition or an implant that lasts for life), and the notes' statements that name a
companion condition, each term with the fact that records it."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.diagnoses import HISTORY_OF, history_topic, topic_stems
from pipeline.clinical.risk_flags import during_stay
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


def _note_terms(state: EvidenceState, companion: dict[str, Any]) -> list[tuple[Fact, str]]:
    """The notes' statements of conditions and habits that name a ``companion`` keyword and none
    of its ``notes`` words ("denies", "family history": a note's words are not a coded term),
    each as the keyword it names ("opioid named in the notes"): the line names the finding,
    not the sentence."""
    found = []
    for fact in [*state.facts["condition_statement"], *state.facts["social_statement"]]:
        said = f" {attributes_as(fact, NarrativeAttributes).text.lower()} "
        named = next((k for k in companion["keywords"] if k in said), None)
        if named and not any(word in said for word in companion["notes"]):
            found.append((fact, f"{named} named in the notes"))
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


def _implied_treatments(state: EvidenceState) -> list[tuple[Fact, str]]:
    """A "History of X" recorded during the stay, with no procedure of the episode that may be
    X and not the aftermath of the stay's own event ("History of myocardial infarction" the day
    of the infarction), is X done in the stay as the record implies it (the draft says so, and
    flags it): an indication as a recorded procedure is (secondary prevention after a bypass the
    record shows only this way), where the "History of" term is cancelled as a past event's."""
    done = {
        stem
        for f in state.facts["procedure"]
        for stem in topic_stems(attributes_as(f, ProcedureAttributes).name)
    }
    episode = [
        f
        for f in state.facts["diagnosis"]
        if attributes_as(f, DiagnosisAttributes).listing in _EPISODE_LISTINGS
    ]
    events = {
        stem
        for f in episode
        if not history_topic(display := attributes_as(f, DiagnosisAttributes).display)
        for stem in topic_stems(display)
    }
    found = []
    for fact in episode:
        diagnosis = attributes_as(fact, DiagnosisAttributes)
        topic = history_topic(diagnosis.display)
        if not topic or diagnosis.status_post or topic & done or topic <= events:
            continue
        if during_stay(state, diagnosis.onset):
            found.append((fact, HISTORY_OF.sub("", plain_term(diagnosis.display)).strip()))
    return found


def indication(state: EvidenceState, rule: dict[str, Any]) -> list[tuple[Fact, str]]:
    """The terms that name the rule's indication; a treatment the record implies only where its
    "History of" term does not name it already."""
    terms = indication_terms(state, rule.get("problem_list", False), rule.get("devices", False))
    found = [(f, term) for f, term in terms if names_it(term, rule)]
    named = {f.id for f, _ in found}
    implied = _implied_treatments(state)
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
        alongside += _note_terms(state, companion)
    return indications + alongside if alongside else []
