"""Whether the stay's record changed since its draft was made, asked of the EHR in one request
(``fhir_mapping.record_changes``): a relaunch never pulls the stay again to find out."""

from __future__ import annotations

import asyncio
from datetime import datetime

from fhir_mapping.record_changes import change_searches, changed_count, changes_batch
from fhir_mapping.resources import RECORD_TYPES
from smartapp.ehr.fhir_client import FhirClient, FhirError


async def record_changed_since(client: FhirClient, patient: str, since: datetime) -> bool | None:
    """True or False; None when the EHR cannot say (a search refused, no total). One batch
    request, or where the EHR refuses an app's batch, the same count-only searches at once."""
    try:
        count = changed_count(
            await client.batch(changes_batch(patient, since)), len(RECORD_TYPES) + 1
        )
    except FhirError as refused:
        if refused.status is None or not 400 <= refused.status < 500:
            return None
        count = await _counted_one_by_one(client, patient, since)
    return None if count is None else count > 0


async def _counted_one_by_one(client: FhirClient, patient: str, since: datetime) -> int | None:
    try:
        totals = await asyncio.gather(
            *(client.count(kind, params) for kind, params in change_searches(patient, since))
        )
    except FhirError:
        return None
    return None if any(total is None for total in totals) else sum(t for t in totals if t)
