"""Devices and supplies: the patient's devices on record (implants such as a heart valve or a
stent, and home equipment) and what was supplied during the stay (a kidney graft).

An implant is on the record for life, so every device of the patient that is not inactive or
entered in error is mapped, whatever its date; which devices are implants, and what they imply
(a mechanical valve calls for anticoagulation), is the pipeline's to read from its table. A
supply delivery belongs to the stay by its time.
"""

from __future__ import annotations

from fhir.resources.R4B.device import Device
from fhir.resources.R4B.supplydelivery import SupplyDelivery

from fhir_mapping.codes import as_datetime, concept_text
from fhir_mapping.mapped import Mapped, ref
from fhir_mapping.scope import Scope
from pipeline.evidence.model import DeviceAttributes, Fact, SourceRef, stable_id

_GONE = frozenset({"inactive", "entered-in-error"})


def _fact(key: str, attributes: DeviceAttributes, source: SourceRef) -> Fact:
    return Fact(
        id=stable_id(attributes.kind, key),
        category="device",
        attributes=attributes,
        sources=[source],
    )


def _devices(scope: Scope, mapped: Mapped) -> None:
    for item in scope.index.of_type(Device):
        device = item.model
        name = concept_text(device.type) or next(
            (n.name for n in device.deviceName or [] if n.name), None
        )
        if not scope.is_patient(device.patient) or device.status in _GONE or name is None:
            continue
        when = as_datetime(device.manufactureDate or device.expirationDate)
        if scope.after_discharge(when):
            mapped.exclude(item, "out_of_scope", "a device recorded after discharge")
            continue
        attributes = DeviceAttributes(kind="device", name=name, when=when, status=device.status)
        source = ref(item, "type" if device.type else "deviceName")
        mapped.facts.append(_fact(item.key, attributes, source))


def _supplies(scope: Scope, mapped: Mapped) -> None:
    for item in scope.index.of_type(SupplyDelivery):
        delivery = item.model
        when = as_datetime(delivery.occurrenceDateTime)
        supplied = delivery.suppliedItem
        name = concept_text(supplied.itemCodeableConcept) if supplied else None
        if (
            not scope.is_patient(delivery.patient)
            or name is None
            or delivery.status in {"abandoned", "entered-in-error"}
            or not scope.during_stay(when)
        ):
            continue
        attributes = DeviceAttributes(kind="supplied", name=name, when=when, status=delivery.status)
        mapped.facts.append(_fact(item.key, attributes, ref(item, "suppliedItem")))


def map_devices(scope: Scope) -> Mapped:
    mapped = Mapped()
    _devices(scope, mapped)
    _supplies(scope, mapped)
    return mapped
