"""Ended prescriptions of the year before the episode: the record's last word on how a home drug
was taken.

A note lists the patient's home drugs with no dose ("oxycodone 10 mg"); the orders that last
prescribed them were completed months before the stay, so the medication mapping leaves them out
as historical, never current. The best possible medication history (WHO High 5s medication
reconciliation; ISMP Canada) still reads them: each drug's latest ended prescription within
``PRESCRIPTION_HISTORY_DAYS`` before the episode, with its dosage, is a fact of its own kind,
which only says how the drug was last prescribed.
"""

from __future__ import annotations

from datetime import timedelta

from fhir.resources.R4B.medicationrequest import MedicationRequest

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.dosage import dosage_attributes
from fhir_mapping.episode import encounter_period
from fhir_mapping.mapped import Mapped
from fhir_mapping.resources import ParsedResource
from fhir_mapping.scope import Scope
from pipeline.evidence.mapped import PRESCRIPTION_HISTORY_DAYS
from pipeline.evidence.model import PrescriptionAttributes

_ENDED = frozenset({"completed", "stopped"})


def map_prescriptions(scope: Scope) -> Mapped:
    """Each drug's latest ended prescription, authored within the window before the episode,
    that says how it was taken (a dose or a frequency)."""
    mapped = Mapped()
    admitted = encounter_period(scope.encounter)[0]
    if admitted is None:
        return mapped
    # Counted from the stay's own admission, as the pull's look-back is.
    since = admitted - timedelta(days=PRESCRIPTION_HISTORY_DAYS)
    latest: dict[str, tuple[ParsedResource[MedicationRequest], PrescriptionAttributes]] = {}
    for item in scope.index.of_type(MedicationRequest):
        request = item.model
        authored = as_datetime(request.authoredOn)
        name = concept_text(request.medicationCodeableConcept)
        if (
            name is None
            or request.status not in _ENDED
            or not scope.is_patient(request.subject)
            or not scope.before_episode(authored)
            or authored < since
        ):
            continue
        dosage = request.dosageInstruction[0] if request.dosageInstruction else None
        how = dosage_attributes(dosage, name)
        if not (how["dose"] or how["frequency"]):
            continue
        attributes = PrescriptionAttributes(
            name=name,
            dose=how["dose"],
            frequency=how["frequency"],
            as_needed=how["as_needed"],
            dosage_text=how["dosage_text"],
            units_per_day=how["units_per_day"],
            authored_on=authored,
            status=request.status,
        )
        seen = latest.get(name.lower())
        if seen is None or seen[1].authored_on < authored:
            latest[name.lower()] = (item, attributes)
    for item, attributes in latest.values():
        mapped.add("prescription", item, attributes, "dosageInstruction")
    return mapped
