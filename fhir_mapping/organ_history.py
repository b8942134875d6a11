"""The earlier record of a stay coded as a transplant ("Awaiting transplantation of kidney") or
a sterilization ("Sterilization requested"): the reasons of the patient's earlier encounters and
the care plans still active, each once; an encounter reason with what its latest visit did.

A transplant stay's own codes name a status, not the disease the graft treats. The indication
(chronic kidney disease stage 4, a dialysis care plan) is often only on an earlier visit's
reason or an old plan, never a Condition, so the problem list cannot show it. A sterilization
ends the contraception care that earlier visits gave (quarterly injections with no drug order).
Mapped only for such a stay, as candidates: which of them are about the organ, or are the care
the stay ends, is the pipeline's tables' to say, never the mapping's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime

from fhir.resources.R4B.careplan import CarePlan
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.procedure import Procedure

from fhir_mapping.care_plans import ACTIVE_PLAN, plan_title
from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.demographics import clinical_reasons
from fhir_mapping.episode import encounter_period
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import OrganHistoryAttributes

_TRANSPLANT = re.compile(r"\btransplant", re.IGNORECASE)
_STERILIZATION = re.compile(r"\bsteriliz", re.IGNORECASE)


def reads_earlier_record(reasons: Iterable[str]) -> bool:
    """Whether a stay's reason texts name a transplant (awaited or done) or a sterilization:
    the one test for the mapping and for the pull, which then reads every encounter of the
    patient."""
    return any(_TRANSPLANT.search(text) or _STERILIZATION.search(text) for text in reasons)


def reads_earlier_care(reasons: Iterable[str]) -> bool:
    """Whether a stay's reason texts name a sterilization: the care it ends is earlier visits'
    (and what they did), which the mapping and the pull both read."""
    return any(_STERILIZATION.search(text) for text in reasons)


def _own_reasons(scope: Scope) -> list[str]:
    return [concept_text(reason) or "" for reason in scope.encounter.model.reasonCode or []]


def _every_reason(model: Encounter) -> list[CodeableConcept]:
    """An encounter's reason codes, care given among them ("Contraception care")."""
    return list(model.reasonCode or [])


def _earlier_reasons(
    scope: Scope,
    mapped: Mapped,
    reasons: Callable[[Encounter], list[CodeableConcept]],
) -> None:
    """Each reason of an encounter before the episode (as ``reasons`` reads them), once, at its
    latest visit."""
    latest: dict[str, tuple[datetime, str, ParsedResource[Encounter]]] = {}
    for item in scope.index.of_type(Encounter):
        start = encounter_period(item)[0]
        if not scope.is_patient(item.model.subject) or not scope.before_episode(start):
            continue
        for reason in reasons(item.model):
            text = concept_text(reason) or ""
            if text.lower() not in latest or latest[text.lower()][0] < start:
                latest[text.lower()] = (start, text, item)
    done = _procedures_by_encounter(scope)
    for start, text, item in latest.values():
        attributes = OrganHistoryAttributes(
            kind="encounter_reason", text=text, when=start, done=done.get(item.key, [])
        )
        mapped.add("organhistory", item, attributes, "reasonCode")


def _procedures_by_encounter(scope: Scope) -> dict[str, list[str]]:
    """The names of the procedures each encounter of the patient holds, each once."""
    done: dict[str, list[str]] = {}
    for item in scope.of_patient(Procedure):
        procedure = item.model
        key = scope.index.resolve_key(
            procedure.encounter.reference if procedure.encounter else None
        )
        name = concept_text(procedure.code)
        if key is not None and name and name not in done.setdefault(key, []):
            done[key].append(name)
    return done


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
    own = _own_reasons(scope)
    if not reads_earlier_record(own):
        return mapped
    # A transplant's indication is a clinical reason; the care a sterilization ends is not one.
    sterilization = reads_earlier_care(own)
    _earlier_reasons(scope, mapped, _every_reason if sterilization else clinical_reasons)
    _active_plans(scope, mapped)
    return mapped
