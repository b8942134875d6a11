"""The earlier record of a stay coded as a transplant ("Awaiting transplantation of kidney"):
the reasons of the patient's earlier encounters and the care plans still active, each once.

A transplant stay's own codes name a status, not the disease the graft treats. The indication
(chronic kidney disease stage 4, a dialysis care plan) is often only on an earlier visit's
reason or an old plan, never a Condition, so the problem list cannot show it. Mapped only for a
stay coded as a transplant, as candidates: which of them are about the organ is the pipeline's
``transplant_organs`` table's to say, never the mapping's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from fhir.resources.R4B.careplan import CarePlan
from fhir.resources.R4B.encounter import Encounter

from fhir_mapping.care_plans import ACTIVE_PLAN, plan_title
from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.demographics import clinical_reasons
from fhir_mapping.episode import encounter_period
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import OrganHistoryAttributes

_TRANSPLANT = re.compile(r"\btransplant", re.IGNORECASE)


def names_transplant(reasons: Iterable[str]) -> bool:
    """Whether a stay's reason texts name a transplant (awaited or done): the one test for the
    mapping and for the pull, which then reads every encounter of the patient."""
    return any(_TRANSPLANT.search(text) for text in reasons)


def coded_as_transplant(scope: Scope) -> bool:
    """Whether the stay's own reason codes name a transplant."""
    reasons = scope.encounter.model.reasonCode or []
    return names_transplant(concept_text(reason) or "" for reason in reasons)


def _earlier_reasons(scope: Scope, mapped: Mapped) -> None:
    """Each reason of an encounter before the episode, once, at its latest visit."""
    latest: dict[str, tuple[datetime, str, ParsedResource[Encounter]]] = {}
    for item in scope.index.of_type(Encounter):
        start = encounter_period(item)[0]
        if not scope.is_patient(item.model.subject) or not scope.before_episode(start):
            continue
        for reason in clinical_reasons(item.model):
            text = concept_text(reason) or ""
            if text.lower() not in latest or latest[text.lower()][0] < start:
                latest[text.lower()] = (start, text, item)
    for start, text, item in latest.values():
        attributes = OrganHistoryAttributes(kind="encounter_reason", text=text, when=start)
        mapped.add("organhistory", item, attributes, "reasonCode")


def _active_plans(scope: Scope, mapped: Mapped) -> None:
    """Care plans begun before the episode and still active at discharge."""
    for item in scope.index.of_type(CarePlan):
        plan = item.model
        start = as_datetime(plan.period.start) if plan.period else None
        if not scope.is_patient(plan.subject) or plan.status not in ACTIVE_PLAN:
            continue
        if not scope.before_episode(start):
            continue
        attributes = OrganHistoryAttributes(kind="care_plan", text=plan_title(plan), when=start)
        mapped.add("organhistory", item, attributes, "category")


def map_organ_history(scope: Scope) -> Mapped:
    mapped = Mapped()
    if coded_as_transplant(scope):
        _earlier_reasons(scope, mapped)
        _active_plans(scope, mapped)
    return mapped
