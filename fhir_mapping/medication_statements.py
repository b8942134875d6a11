"""MedicationStatement to pre-admission medication facts: what the patient was taking.

A statement records that a drug is taken (reported by the patient, a pharmacy, a previous
visit); it is not an order. One that is current at admission (status active, intended, on-hold
or unknown, and effective from before discharge) joins the pre-admission list as
``recorded_as="statement"``: reconciliation continues it only when a discharge order carries the
drug, and asks "held or stopped?" otherwise. A statement that ended before the stay, or says the
drug is not taken, is excluded with its reason.
"""

from __future__ import annotations

from datetime import datetime

from fhir.resources.R4B.medicationstatement import MedicationStatement

from fhir_mapping.codes import as_datetime
from fhir_mapping.mapped import Mapped
from fhir_mapping.medications import identified_drug, medication_fact
from fhir_mapping.pull_plan import CURRENT_STATEMENT
from fhir_mapping.scope import Scope
from pipeline.evidence.model import MedicationAttributes

CURRENT = frozenset(CURRENT_STATEMENT.split(","))


def _effective(statement: MedicationStatement) -> tuple[datetime | None, datetime | None]:
    """When the statement says the drug was taken: (from, until)."""
    period = statement.effectivePeriod
    if period is not None:
        return as_datetime(period.start), as_datetime(period.end)
    return as_datetime(statement.effectiveDateTime), None


def map_medication_statements(scope: Scope) -> Mapped:
    mapped = Mapped()
    for item in scope.of_patient(MedicationStatement):
        statement = item.model
        if statement.status not in CURRENT:
            mapped.exclude(item, "status", f"statement status is {statement.status}")
            continue
        began, ended = _effective(statement)
        asserted = as_datetime(statement.dateAsserted)
        if scope.before_episode(ended):
            mapped.exclude(item, "historical", f"taken until {ended.isoformat()}, before admission")
            continue
        if scope.after_discharge(began or asserted):
            mapped.exclude(item, "out_of_scope", "recorded as taken only after the stay")
            continue
        dosage = statement.dosage[0] if statement.dosage else None
        drug = identified_drug(item, scope, mapped, dosage)
        if drug is None:
            continue
        attributes = MedicationAttributes(
            **drug.fields,
            status=statement.status,
            authored_on=asserted or began,
            phase="admission",
            phase_rule=f"medication statement, {statement.status} at admission",
            recorded_as="statement",
        )
        mapped.facts.append(medication_fact(item, attributes, drug.sources))
    return mapped
