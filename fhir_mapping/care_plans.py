"""Care plans: what the patient is to do or have after discharge, with their activities,
the problems they address and their goals.

A care plan belongs to the follow-up when it is one of the episode's (it references one of its
encounters, or began during the episode) and is in effect at discharge, or when it is in effect
and addresses a reason of the episode's encounters or was made at the recent acute care the
draft names (the overdose visit before a detoxification stay), whenever it began: the ongoing
plan for what brought the patient in. In effect at discharge is read as of discharge: active,
or a period that ran past it, whatever the status now.
"""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.careplan import CarePlan
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.condition import Condition
from fhir.resources.R4B.encounter import Encounter
from fhir.resources.R4B.goal import Goal

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.episode import concept_keys, reasons_of
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import as_type
from fhir_mapping.scope import Scope
from pipeline.evidence.model import CarePlanAttributes

ACTIVE_PLAN = frozenset({"active", "on-hold", "draft"})


def _code_of(condition: Condition | None) -> CodeableConcept | None:
    return condition.code if condition is not None else None


def _in_effect_at_discharge(scope: Scope, plan: CarePlan) -> bool:
    """Read as of discharge: active, or a plan whose period ran past discharge whatever its
    status now (a physiotherapy plan "completed" two months after the nursing stay ended was in
    effect when the patient left)."""
    end = _end(plan)
    return plan.status in ACTIVE_PLAN or (end is not None and scope.after_discharge(end))


def _episode_reasons(scope: Scope) -> set[str]:
    """The reasons of every encounter of the episode, by code and by text: a nursing stay coded
    only as a transfer continues the operation's stay, whose reason its plans address."""
    encounters = (scope.index.by_key[key] for key in {scope.encounter.key, *scope.episode})
    return {
        key
        for item in encounters
        if (encounter := as_type(item, Encounter)) is not None
        for key in reasons_of(encounter)
    }


def _ongoing(scope: Scope, plan: CarePlan, reasons: set[str], recent: set[str]) -> bool:
    """Whether a plan in effect at discharge is the one the patient returns to: it addresses a
    condition that is a reason of the episode (``reasons``, by code or text), or was made at
    the emergency visit or stay of the weeks before that the draft names as recent
    (``recent``, their keys: addiction counselling planned at the overdose visit that preceded
    a detoxification stay)."""
    if not _in_effect_at_discharge(scope, plan):
        return False
    made_at = scope.index.resolve_key(plan.encounter.reference) if plan.encounter else None
    if made_at is not None and made_at in recent:
        return True
    return any(
        concept_keys(_code_of(scope.index.resolve(reference.reference, Condition))) & reasons
        for reference in plan.addresses or []
    )


def _end(plan: CarePlan) -> datetime | None:
    return as_datetime(plan.period.end) if plan.period else None


def plan_title(plan: CarePlan) -> str:
    """The plan's category in words ("Heart failure self management plan"), else its title."""
    named = (text for text in map(concept_text, plan.category or []) if text and " " in text)
    return next(named, None) or plan.title or "care plan"


def _care_plans(scope: Scope, mapped: Mapped) -> None:
    reasons = _episode_reasons(scope)
    recent = {item.key for item in scope.recent_acute_care()}
    for item in scope.of_patient(CarePlan):
        plan = item.model
        start = as_datetime(plan.period.start) if plan.period else None
        ongoing = _ongoing(scope, plan, reasons, recent)
        ours = scope.is_encounter(plan.encounter) or scope.during_stay(start) or ongoing
        if not ours or not _in_effect_at_discharge(scope, plan) or scope.after_discharge(start):
            mapped.exclude(item, "out_of_scope", "not a care plan of this stay active at discharge")
            continue
        active = plan.status in ACTIVE_PLAN
        activities = list(
            dict.fromkeys(
                text
                for activity in plan.activity or []
                if activity.detail is not None and (text := concept_text(activity.detail.code))
            )
        )
        addresses = [
            text
            for reference in plan.addresses or []
            if (
                text := reference.display
                or concept_text(_code_of(scope.index.resolve(reference.reference, Condition)))
            )
        ]
        goals = [
            text
            for reference in plan.goal or []
            if (goal := scope.index.resolve(reference.reference, Goal)) is not None
            and (text := concept_text(goal.description))
        ]
        mapped.add(
            "careplan",
            item,
            CarePlanAttributes(
                kind="care_plan",
                title=plan_title(plan),
                # Read as of discharge: a plan that ended after it was in effect then, and its
                # end says why its status now differs (a reader read "active" beside a
                # "completed" plan as a contradiction).
                status=plan.status if active else "in effect at discharge",
                until=None if active else _end(plan),
                activities=activities,
                addresses=addresses,
                goals=goals,
                when=start,
                before_stay=scope.before_episode(start),
            ),
            "category",
        )


def map_care_plans(scope: Scope) -> Mapped:
    mapped = Mapped()
    _care_plans(scope, mapped)
    return mapped
