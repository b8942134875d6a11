"""A test ordered in the stay that no result answers yet: a result pending at discharge.

A discharge summary names the tests whose results are still awaited, and who follows them up
(The Joint Commission, RC.02.04.01: the discharge summary's content; Roy et al., Ann Intern Med
2005;143:121-8: results that return after discharge, and how many go unseen). An EHR shows such a
test in one of two ways: a report still registered or preliminary (``fhir_mapping.results``), or
an order still active that no report or observation is based on yet. This module reads the
second: a ServiceRequest of the stay, an order (not a plan or a proposal) for a test (its
category a laboratory, imaging or other diagnostic one), active, and answered by nothing the
record holds.
"""

from __future__ import annotations

from fhir.resources.R4B.diagnosticreport import DiagnosticReport
from fhir.resources.R4B.observation import Observation
from fhir.resources.R4B.servicerequest import ServiceRequest

from fhir_mapping.codes import as_datetime, concept_text, first_coding
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.model import PendingResultAttributes

OPEN_ORDER = "ordered in the stay, no result in the record"

# What a request asks for, by its category: SNOMED CT's laboratory procedure, imaging and
# evaluation procedure (the categories of FHIR R4's ServiceRequest category value set), and HL7
# v2 table 0074's diagnostic service sections, which EHRs also send.
_TEST_CATEGORIES = frozenset(
    {"108252007", "363679005", "386053000", "LAB", "RAD", "CT", "MR", "US", "CUS", "NMR", "EC"}
)
_ORDER_INTENTS = frozenset({"order", "original-order", "reflex-order", "filler-order"})
_VOID = frozenset({"cancelled", "entered-in-error"})


def _answered(scope: Scope) -> set[str]:
    """The requests some report or observation of the record says it is based on."""
    answers: list[DiagnosticReport | Observation] = [
        *(item.model for item in scope.index.of_type(DiagnosticReport)),
        *(item.model for item in scope.index.of_type(Observation)),
    ]
    return {
        key
        for answer in answers
        if answer.status not in _VOID
        for based_on in answer.basedOn or []
        if (key := scope.index.resolve_key(based_on.reference)) is not None
    }


def _is_test(request: ServiceRequest) -> bool:
    codes = {coding.code for concept in request.category or [] for coding in concept.coding or []}
    return bool(codes & _TEST_CATEGORIES)


def open_test_orders(
    scope: Scope,
) -> list[tuple[ParsedResource[ServiceRequest], PendingResultAttributes]]:
    """The stay's test orders still open and answered by nothing the record holds."""
    answered = _answered(scope)
    found = []
    for item in scope.of_patient(ServiceRequest):
        request = item.model
        authored = as_datetime(request.authoredOn or request.occurrenceDateTime)
        if (
            request.status != "active"
            or request.intent not in _ORDER_INTENTS
            or not _is_test(request)
            or item.key in answered
            or not scope.in_stay(request.encounter, authored)
        ):
            continue
        pending = PendingResultAttributes(
            name=concept_text(request.code) or "test not named",
            code=first_coding(request.code),
            status=OPEN_ORDER,
            ordered=authored,
        )
        found.append((item, pending))
    return found
