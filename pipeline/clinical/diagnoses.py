"""Discharge diagnoses as a physician lists them, by rules over the diagnosis facts.

1. A social or administrative finding (employment, education, housing, stress, refugee status…,
   the ``social_findings`` table) is not a diagnosis: it goes to Social history.
2. The stay's own reason (``principal``) comes first; a status or administrative term ("History
   of X", "Awaiting X", "X requested", a transfer) is never the principal diagnosis (it says
   what is past or arranged), only a diagnosis of the episode.
3. Then the diagnoses that began in the episode (onset from the window before admission to
   discharge, or recorded on one of its encounters).
4. An acute event (``acute_events`` table: sepsis, infarction, fracture…) recorded active since
   long before the stay (``stale_after_days``) is not a current diagnosis. It is a data-quality
   flag for the physician to confirm only when it is not abated and the stay is about something
   related (its reason or a diagnosis of the episode shares a word with it, or the stay names
   none): a decades-old "active" sepsis beside a knee operation is noise, not a question.
5. Everything else still active is an active problem, listed apart.
6. "History of X" where X is a procedure of the episode ("History of coronary artery bypass
   grafting" after the bypass of this stay) is written "Status post X", with the procedure's date.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pipeline.clinical.clinical_terms import (
    STATUS_TERM,
    history_topic,
    topic_stems,
)
from pipeline.clinical.tables import CodeTable, table
from pipeline.evidence.model import (
    DiagnosisAttributes,
    DiagnosisListing,
    EvidenceState,
    Fact,
    ProcedureAttributes,
    ReviewFlag,
    attributes_as,
    aware,
)
from pipeline.settings import PipelineSettings
from pipeline.text.rendering import plain_term

RESOLVED_STATUSES = frozenset({"resolved", "inactive", "remission"})


def _status_post(diagnosis: DiagnosisAttributes, procedures: list[Fact]) -> Fact | None:
    """The procedure of the episode that a "History of X" names, if any."""
    wanted = history_topic(diagnosis.display)
    for fact in procedures:
        procedure = fact.attributes
        if (
            isinstance(procedure, ProcedureAttributes)
            and wanted
            and (wanted <= topic_stems(procedure.name))
        ):
            return fact
    return None


def listing_of(
    diagnosis: DiagnosisAttributes,
    admission: datetime | None,
    discharge: datetime | None,
    window: timedelta,
    social: CodeTable,
    acute: CodeTable,
) -> DiagnosisListing:
    code = diagnosis.code.code if diagnosis.code else None
    if social.matches(code, diagnosis.display):
        return "social"
    if diagnosis.principal and not STATUS_TERM.search(plain_term(diagnosis.display)):
        return "principal"
    onset = diagnosis.onset
    began_in_episode = (
        onset is not None
        and admission is not None
        and admission - window <= onset
        and (discharge is None or onset <= discharge)
    )
    if began_in_episode or (diagnosis.role == "encounter_diagnosis" and onset is None):
        return "episode"
    stale_after = timedelta(days=int(acute.extra.get("stale_after_days", 90)))
    if (
        acute.matches(code, diagnosis.display)
        and onset is not None
        and admission is not None
        and onset < admission - stale_after
    ):
        return "stale"
    return "active"


def classify_diagnoses(state: EvidenceState, settings: PipelineSettings) -> EvidenceState:
    """Each diagnosis fact with its listing, and a data-quality flag for each stale event."""
    stay = state.stay()
    admission, discharge = (stay.start, stay.end) if stay else (None, None)
    social = table("social_findings", settings)
    acute = table("acute_events", settings)
    window = timedelta(hours=settings.episode_window_h)
    listed: list[Fact] = []
    flags = list(state.flags_for_review)
    procedures = state.facts.get("procedure", [])
    for fact in state.facts.get("diagnosis", []):
        diagnosis = fact.attributes
        if not isinstance(diagnosis, DiagnosisAttributes):
            listed.append(fact)
            continue
        update: dict[str, object] = {
            "listing": listing_of(diagnosis, admission, discharge, window, social, acute)
        }
        done = _status_post(diagnosis, procedures)
        if done is not None and isinstance(done.attributes, ProcedureAttributes):
            update |= {
                "status_post": done.attributes.name,
                "status_post_on": done.attributes.performed_start,
            }
        listed.append(fact.model_copy(update={"attributes": diagnosis.model_copy(update=update)}))
    listed = _superseded(listed, table("superseded_problems", settings))
    listed = _specified_in_stay(listed, admission)
    about = _what_the_stay_is_about(state, listed)
    for fact in listed:
        diagnosis = fact.attributes
        if not isinstance(diagnosis, DiagnosisAttributes) or diagnosis.listing != "stale":
            continue
        abated = diagnosis.abatement is not None or (diagnosis.clinical_status in RESOLVED_STATUSES)
        related = not about or bool(topic_stems(diagnosis.display) & about)
        if not abated and related and diagnosis.onset is not None:
            flags.append(
                ReviewFlag.on_facts(
                    ("stale",),
                    "stale_condition",
                    f"{plain_term(diagnosis.display)} recorded active since "
                    f"{diagnosis.onset.date().isoformat()}, an acute event: confirm it is current",
                    "diagnoses",
                    [fact.id],
                )
            )
    facts = dict(state.facts) | {"diagnosis": listed}
    return state.model_copy(update={"facts": facts, "flags_for_review": flags})


def _what_the_stay_is_about(state: EvidenceState, diagnoses: list[Fact]) -> set[str]:
    """The content words of the stay's reasons and of the episode's diagnoses."""
    stay = state.stay()
    terms = list(stay.reasons) if stay is not None else []
    terms += [
        f.attributes.display
        for f in diagnoses
        if isinstance(f.attributes, DiagnosisAttributes)
        and f.attributes.listing in {"principal", "episode"}
    ]
    return {word for term in terms for word in topic_stems(term)}


def _superseded(diagnoses: list[Fact], superseding: CodeTable) -> list[Fact]:
    """Active problems a later one of the same patient supersedes (``superseded_problems``:
    prediabetes by diabetes, a kidney disease stage by a later stage), listed as such and no
    longer as active problems."""
    active = [
        d
        for f in diagnoses
        if isinstance(d := f.attributes, DiagnosisAttributes)
        if d.listing == "active"
    ]
    return [
        _listed_as(f, "superseded")
        if isinstance(f.attributes, DiagnosisAttributes)
        and f.attributes.listing == "active"
        and any(
            _supersedes(later, f.attributes, rule)
            for rule in superseding.extra["rules"]
            for later in active
        )
        else f
        for f in diagnoses
    ]


def _supersedes(
    later: DiagnosisAttributes, earlier: DiagnosisAttributes, rule: dict[str, Any]
) -> bool:
    """Whether ``later`` supersedes ``earlier`` by ``rule``: each named as the rule says, the
    later begun the same day or after."""

    def named(d: DiagnosisAttributes, words: list[str]) -> bool:
        return any(word in plain_term(d.display).lower() for word in words)

    return (
        later is not earlier
        and named(earlier, rule["problem"])
        and named(later, rule["superseded_by"])
        and (earlier.onset is None or (later.onset is not None and later.onset >= earlier.onset))
    )


def _listed_as(fact: Fact, listing: DiagnosisListing) -> Fact:
    diagnosis = attributes_as(fact, DiagnosisAttributes)
    return fact.model_copy(update={"attributes": diagnosis.model_copy(update={"listing": listing})})


def _specified_in_stay(diagnoses: list[Fact], admission: datetime | None) -> list[Fact]:
    """The principal diagnosis is the condition established after study to be chiefly
    responsible for the admission (UHDDS): a diagnosis made in the stay that names the coded
    reason more specifically (every topic word of "Sleep disorder" and more: "Obstructive sleep
    apnea syndrome") is that condition. It becomes the principal diagnosis, saying which coded
    reason it specifies, and the reason is no longer a line of its own. Two such diagnoses, or
    none, leave the coded reason as it is: the record does not say which."""
    principal = [
        f for f in diagnoses if (d := _diagnosis(f)) is not None and d.listing == "principal"
    ]
    if len(principal) != 1 or admission is None:
        return diagnoses
    reason = attributes_as(principal[0], DiagnosisAttributes)
    words = _named(reason.display)
    specific = [
        f
        for f in diagnoses
        if (d := _diagnosis(f)) is not None
        and d.listing == "episode"
        and not STATUS_TERM.search(plain_term(d.display))
        and d.onset is not None
        and aware(d.onset) >= aware(admission)
        and words
        and words < _named(d.display)
    ]
    if len(specific) != 1:
        return diagnoses
    chosen = attributes_as(specific[0], DiagnosisAttributes)
    update = {"listing": "principal", "specifies": plain_term(reason.display)}
    established = chosen.model_copy(update=update)
    return [
        specific[0].model_copy(update={"attributes": established})
        if f is specific[0]
        else _listed_as(f, "specified")
        if f is principal[0]
        else f
        for f in diagnoses
    ]


# Words that say what kind of thing a term is, not which: "Gingival disease" names no more
# than "Gingivitis".
_KIND_STEMS = frozenset({"diseas", "syndro", "condit", "proble"})


def _named(term: str) -> set[str]:
    """What a term names, for telling a more specific one: its topic stems, less kind words."""
    return topic_stems(term) - _KIND_STEMS


def _diagnosis(fact: Fact) -> DiagnosisAttributes | None:
    return fact.attributes if isinstance(fact.attributes, DiagnosisAttributes) else None
