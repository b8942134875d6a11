"""DiagnosticReport and Observation to results: final values, and pending reports.

A final (or amended, corrected, appended) report gives one ``lab_result`` fact per Observation
value, citing both the Observation element and the report's ``result[i]``. A registered, partial
or preliminary report is a ``pending_result``. Observations of the stay outside any report are
taken when their category is laboratory or vital-signs, or when they are a questionnaire's
score (a survey with a number: a PHQ-9, an AUDIT-C). A report that only presents a note is a
document (``fhir_mapping.documents``), not a result.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from fhir.resources.R4B.observation import Observation, ObservationComponent

from fhir_mapping.codes import LOINC, as_datetime, concept_text, first_coding
from fhir_mapping.mapped import Mapped, ref
from fhir_mapping.resources import ParsedResource, as_type
from fhir_mapping.scope import Scope
from pipeline.evidence.mapped import (
    PROBLEM_MEASURE_DAYS,
    RECENT_RESULTS_DAYS,
    is_lasting_measure,
    is_problem_measure,
)
from pipeline.evidence.model import (
    Fact,
    LabResultAttributes,
    PendingResultAttributes,
    SourceRef,
    stable_id,
)

FINAL_REPORT = frozenset({"final", "amended", "corrected", "appended"})
PENDING_REPORT = frozenset({"registered", "partial", "preliminary"})
_VOID = frozenset({"cancelled", "entered-in-error"})
_STANDALONE_CATEGORIES = frozenset({"laboratory", "vital-signs"})
_VALUE_ELEMENTS = (
    "valueQuantity",
    "valueString",
    "valueCodeableConcept",
    "valueInteger",
    "valueBoolean",
    "valueDateTime",
)


def _value(
    holder: Observation | ObservationComponent,
) -> tuple[str, Decimal | None, str | None, str | None] | None:
    """(element, number, text, unit) of an Observation or component value; None when absent."""
    for element in _VALUE_ELEMENTS:
        value = getattr(holder, element, None)
        if value is None:
            continue
        if element == "valueQuantity":
            number = Decimal(str(value.value)) if value.value is not None else None
            return element, number, None, value.unit or value.code
        if element == "valueCodeableConcept":
            return element, None, concept_text(value), None
        if element == "valueInteger":
            return element, Decimal(value), None, None
        return element, None, str(value), None
    return None


def _reference_range(
    holder: Observation | ObservationComponent,
) -> tuple[Decimal | None, Decimal | None, str | None]:
    ranges = getattr(holder, "referenceRange", None) or []
    if not ranges:
        return None, None, None
    first = ranges[0]
    low = Decimal(str(first.low.value)) if first.low and first.low.value is not None else None
    high = Decimal(str(first.high.value)) if first.high and first.high.value is not None else None
    return low, high, first.text


def observation_categories(observation: Observation) -> set[str]:
    return {
        coding.code
        for concept in observation.category or []
        for coding in concept.coding or []
        if coding.code
    }


def is_score(observation: Observation) -> bool:
    """A questionnaire's total score: a survey observation with a number (a PHQ-9 of 16)."""
    return "survey" in observation_categories(observation) and observation.valueQuantity is not None


def observation_facts(
    item: ParsedResource[Observation], report_source: SourceRef | None
) -> list[Fact]:
    """One fact per value of an Observation (its components included)."""
    observation = item.model
    effective = observation_effective(observation)
    interpretation = next(
        (text for text in map(concept_text, observation.interpretation or []) if text), None
    )
    category = ", ".join(sorted(observation_categories(observation))) or None
    holders: list[tuple[str, Any, Any]] = [("", observation, observation.code)]
    holders += [
        (f"component[{position}].", component, component.code)
        for position, component in enumerate(observation.component or [])
    ]
    facts = []
    for prefix, holder, code in holders:
        value = _value(holder)
        if value is None:
            continue
        element, number, text, unit = value
        low, high, range_text = _reference_range(holder)
        path = f"{prefix}{element}"
        sources = [ref(item, path)] + ([report_source] if report_source else [])
        facts.append(
            Fact(
                id=stable_id("lab", item.key, path),
                category="lab_result",
                attributes=LabResultAttributes(
                    name=concept_text(code) or "test not named",
                    code=first_coding(code, LOINC) or first_coding(code),
                    value=number,
                    value_text=text,
                    unit=unit,
                    reference_low=low,
                    reference_high=high,
                    reference_text=range_text,
                    interpretation=interpretation,
                    effective=effective,
                    observation_category=category,
                ),
                sources=sources,
            )
        )
    return facts


def observation_effective(observation: Observation) -> datetime | None:
    return as_datetime(
        observation.effectiveDateTime
        or (observation.effectivePeriod.start if observation.effectivePeriod else None)
        or observation.issued
    )


def _baselines(scope: Scope, results: list[Fact]) -> list[Fact]:
    """For each laboratory test of the stay, its latest value before the stay's own
    measurements began (the patient's baseline: a readmission's earlier stay included); and
    for each test the stay never measured, its latest value of the ``RECENT_RESULTS_DAYS``
    before (still the current value: a potassium the week before a stay with no laboratory
    work; a questionnaire's score the week before, a screen nothing acted on); and for a lasting
    measure (an ejection fraction), its latest value of any date; and for a measure that
    bears on a problem on the list (a body mass index, an HbA1c), its latest value of its
    ``PROBLEM_MEASURE_DAYS`` before. Each a fact marked ``baseline``."""
    codes = {
        f.attributes.code.code
        for f in results
        if isinstance(f.attributes, LabResultAttributes)
        and f.attributes.code
        and "vital-signs" not in (f.attributes.observation_category or "")
        and "survey" not in (f.attributes.observation_category or "")
    }
    start = scope.measured_from
    recent_from = start - timedelta(days=RECENT_RESULTS_DAYS) if start else None
    latest: dict[str, tuple[Any, ParsedResource[Observation]]] = {}
    for item in scope.index.of_type(Observation):
        observation = item.model
        code = first_coding(observation.code, LOINC) or first_coding(observation.code)
        when = observation_effective(observation)
        if (
            code is None
            or not scope.before_measured(when)
            or observation.status in _VOID
            or not scope.is_patient(observation.subject)
        ):
            continue
        if (
            code.code not in codes
            and not is_lasting_measure(code.code, concept_text(observation.code))
            and not (
                recent_from is not None
                and when >= recent_from
                and ("laboratory" in observation_categories(observation) or is_score(observation))
            )
            and not (
                start is not None
                and is_problem_measure(code.code)
                and when >= start - timedelta(days=PROBLEM_MEASURE_DAYS[code.code or ""])
            )
        ):
            continue
        code_value = code.code or ""
        if code_value not in latest or latest[code_value][0] < when:
            latest[code_value] = (when, item)
    baselines = []
    for _, item in latest.values():
        for fact in observation_facts(item, None):
            assert isinstance(fact.attributes, LabResultAttributes)
            baseline = fact.attributes.model_copy(update={"baseline": True})
            baselines.append(fact.model_copy(update={"attributes": baseline}))
    return baselines


def map_results(scope: Scope) -> Mapped:
    mapped = Mapped()
    reported: set[str] = set()
    for item in scope.of_patient(DiagnosticReport):
        report = item.model
        effective = report.effectiveDateTime or (
            report.effectivePeriod.start if report.effectivePeriod else None
        )
        if not scope.measured_in_stay(report.encounter, effective or report.issued):
            mapped.exclude(item, "out_of_scope", "report not of this stay")
            continue
        if report.status in _VOID:
            mapped.exclude(item, "status", f"status is {report.status}")
            continue
        if report.status in PENDING_REPORT:
            mapped.add(
                "pending",
                item,
                PendingResultAttributes(
                    name=concept_text(report.code) or "report not named",
                    code=first_coding(report.code, LOINC) or first_coding(report.code),
                    status=report.status,
                    ordered=as_datetime(effective or report.issued),
                ),
                "status",
            )
        for position, result in enumerate(report.result or []):
            key = scope.index.resolve_key(result.reference)
            observation = as_type(scope.index.by_key[key], Observation) if key else None
            if key is None or observation is None:
                mapped.exclude(
                    item,
                    "unresolved",
                    f"result[{position}] {result.reference!r} is not an Observation in the input",
                )
                continue
            reported.add(key)
            if observation.model.status in _VOID or (
                report.status in PENDING_REPORT and observation.model.status != "final"
            ):
                continue
            mapped.facts.extend(observation_facts(observation, ref(item, f"result[{position}]")))
        if not report.result and not report.presentedForm and report.status in FINAL_REPORT:
            mapped.exclude(item, "out_of_scope", "final report with no results and no text")
    _map_standalone_observations(scope, reported, mapped)
    mapped.facts.extend(_baselines(scope, mapped.facts))
    return mapped


def _map_standalone_observations(scope: Scope, reported: set[str], mapped: Mapped) -> None:
    """The stay's laboratory results, vital signs and questionnaire scores that no report
    carries."""
    for item in scope.index.of_type(Observation):
        observation = item.model
        if item.key in reported or not scope.is_encounter(observation.encounter):
            continue
        if not scope.measured_in_stay(observation.encounter, observation_effective(observation)):
            continue
        if not scope.is_patient(observation.subject):
            continue
        if observation.status in _VOID:
            mapped.exclude(item, "status", f"status is {observation.status}")
        elif not observation_categories(observation) & _STANDALONE_CATEGORIES and not is_score(
            observation
        ):
            kinds = ", ".join(sorted(observation_categories(observation))) or "no category"
            mapped.exclude(item, "out_of_scope", f"observation category {kinds} not summarised")
        else:
            mapped.facts.extend(observation_facts(item, None))
