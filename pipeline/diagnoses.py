"""Discharge diagnoses as a physician lists them, by rules over the diagnosis facts.

1. A social or administrative finding (employment, education, housing, stress, refugee status…,
   the ``social_findings`` table) is not a diagnosis: it goes to Social history.
2. The stay's own reason (``principal``) comes first; "History of X" is never the principal
   diagnosis (it says what is past), only a diagnosis of the episode.
3. Then the diagnoses that began in the episode (onset from the window before admission to
   discharge, or recorded on one of its encounters).
4. An acute event (``acute_events`` table: sepsis, infarction, fracture…) recorded active since
   long before the stay (``stale_after_days``) is not a current diagnosis: it is one data-quality
   flag for the physician to confirm.
5. Everything else still active is an active problem, listed apart.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from pipeline.evidence import (
    DiagnosisAttributes,
    DiagnosisListing,
    EvidenceState,
    Fact,
    ReviewFlag,
    stable_id,
)
from pipeline.rendering import plain_term
from pipeline.settings import PipelineSettings
from pipeline.tables import CodeTable, table

HISTORY_OF = re.compile(r"^(?:history of|h/o)\b", re.IGNORECASE)


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
    if diagnosis.principal and not HISTORY_OF.match(plain_term(diagnosis.display)):
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
    for fact in state.facts.get("diagnosis", []):
        diagnosis = fact.attributes
        if not isinstance(diagnosis, DiagnosisAttributes):
            listed.append(fact)
            continue
        listing = listing_of(diagnosis, admission, discharge, window, social, acute)
        listed.append(
            fact.model_copy(
                update={"attributes": diagnosis.model_copy(update={"listing": listing})}
            )
        )
        if listing == "stale" and diagnosis.onset is not None:
            flags.append(
                ReviewFlag(
                    id=stable_id("flag", "stale", fact.id),
                    code="stale_condition",
                    reason=f"{plain_term(diagnosis.display)} recorded active since "
                    f"{diagnosis.onset.date().isoformat()}, an acute event: confirm it is current",
                    raised_by="diagnoses",
                    fact_ids=[fact.id],
                )
            )
    facts = dict(state.facts) | {"diagnosis": listed}
    return state.model_copy(update={"facts": facts, "flags_for_review": flags})
