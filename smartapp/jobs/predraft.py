"""Pre-drafting: the in-progress inpatient stays whose discharge is in sight are drafted before
anyone asks, acting as Provenote itself (SMART Backend Services, ``system/`` scopes).

A stay is in sight when the EHR has recorded a discharge disposition or an end on its
encounter, or it lies at a location the registration names (a discharge lounge). Each stay is
drafted once: a stay whose draft is waiting is pulled again and drafted again only when its
record changed since (compared by digest); a stay being drafted, or already signed, is left.
Nothing is written to the chart before a physician opens a draft, unless the registration asks
for it (``predraft_writes``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from fhir_mapping.json_values import JsonObject, objects_at, string_at
from fhir_mapping.resources import record_digest
from smartapp.access.tokens import EhrAccess
from smartapp.core.errors import log, logged
from smartapp.core.metrics import PREDRAFTS
from smartapp.core.registrations import ClientRegistration
from smartapp.core.statuses import ACTIVE_JOB_STATES, DraftStatus, JobOrigin
from smartapp.core.tables import JobRow
from smartapp.drafts.service import DraftService
from smartapp.ehr.fhir_client import FhirClient
from smartapp.ehr.pull import pull_record
from smartapp.jobs.service import JobService

Outcome = Literal["queued", "redrafted", "unchanged", "drafting", "signed"]


@dataclass(frozen=True, slots=True)
class Stay:
    patient: str
    encounter: str


@dataclass(slots=True)
class PredraftRound:
    """What one round did on one EHR: each stay's outcome, and the jobs it queued."""

    issuer: str
    outcomes: dict[Stay, Outcome] = field(default_factory=dict)
    queued_jobs: list[str] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(self.outcomes.values())


def discharge_in_sight(encounter: JsonObject, locations: set[str]) -> bool:
    """A discharge disposition or an end recorded, or a stay at one of ``locations``."""
    hospitalization = encounter.get("hospitalization")
    if isinstance(hospitalization, dict) and hospitalization.get("dischargeDisposition"):
        return True
    period = encounter.get("period")
    if isinstance(period, dict) and period.get("end"):
        return True
    return any(
        string_at(place, "location", "reference") in locations
        for place in objects_at(encounter, "location")
    )


def _stay(encounter: JsonObject) -> Stay | None:
    subject = string_at(encounter, "subject", "reference") or ""
    encounter_id = string_at(encounter, "id")
    kind, _, patient = subject.rpartition("/")
    if not encounter_id or not patient or not kind.endswith("Patient"):
        return None
    return Stay(patient, encounter_id)


async def stays_in_sight(
    client: FhirClient, inpatient_classes: set[str], locations: set[str]
) -> list[Stay]:
    """The EHR's in-progress inpatient stays whose discharge is in sight."""
    found = await client.search("Encounter", {"status": "in-progress"})
    stays = []
    for encounter in found.resources:
        if string_at(encounter, "class", "code") not in inpatient_classes:
            continue
        stay = _stay(encounter)
        if stay is not None and discharge_in_sight(encounter, locations):
            stays.append(stay)
    return stays


@dataclass(frozen=True, slots=True)
class Predrafting:
    """What pre-drafting works with: the EHRs' access, the drafts and the jobs."""

    access: EhrAccess
    drafts: DraftService
    jobs: JobService
    inpatient_classes: set[str]

    async def round(self, registration: ClientRegistration) -> PredraftRound:
        """Draft ahead every stay in sight on one EHR (idempotent: run it as often as wanted)."""
        client, _ = await self.access.backend_client(registration.issuer)
        done = PredraftRound(registration.issuer)
        locations = set(registration.discharge_locations)
        for stay in await stays_in_sight(client, self.inpatient_classes, locations):
            outcome, job_id = await self._stay(client, registration, stay)
            done.outcomes[stay] = outcome
            if job_id is not None:
                done.queued_jobs.append(job_id)
            PREDRAFTS.labels(outcome).inc()
        log.info(
            "pre-drafting %s: %s",
            registration.issuer,
            dict(done.counts()),
            extra={"event": "predraft_round"},
        )
        return done

    async def _stay(
        self, client: FhirClient, registration: ClientRegistration, stay: Stay
    ) -> tuple[Outcome, str | None]:
        iss = registration.issuer
        draft = await self.drafts.latest_for_stay(iss, stay.patient, stay.encounter)
        if draft is not None and draft.status in {DraftStatus.FINAL, DraftStatus.SIGNING}:
            return "signed", None
        latest = await self.jobs.latest_for(iss, stay.patient, stay.encounter)
        if latest is not None and latest.state in ACTIVE_JOB_STATES:
            return "drafting", None
        if draft is None:
            job = await self._submit(registration, stay)
            return "queued", job.id
        record = await pull_record(client, stay.patient, stay.encounter, self.jobs.pull_bounds)
        drafted_from = await self.jobs.get(draft.job_id)
        known = drafted_from.record_digest if drafted_from is not None else None
        if known is None and drafted_from is not None and drafted_from.record is not None:
            known = record_digest(drafted_from.record)
        if known == record_digest(record):
            return "unchanged", None
        job = await self._submit(registration, stay, record)
        return "redrafted", job.id

    async def _submit(
        self, registration: ClientRegistration, stay: Stay, record: dict[str, Any] | None = None
    ) -> JobRow:
        return await self.jobs.submit(
            registration.issuer,
            stay.patient,
            stay.encounter,
            origin=JobOrigin.PREDRAFT,
            may_write=registration.predraft_writes,
            record=record,
        )

    async def every(self, registrations: list[ClientRegistration], interval_s: float) -> None:
        """Rounds on every EHR that asks for pre-drafting, ``interval_s`` apart, until
        cancelled; a round that fails is logged and the next one runs all the same."""
        while True:
            for registration in registrations:
                try:
                    await self.round(registration)
                except Exception as failure:  # the schedule outlives any one round
                    logged(f"pre-drafting {registration.issuer}", repr(failure))
            await asyncio.sleep(interval_s)
