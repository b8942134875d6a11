"""Pulling one stay's record: the searches ``fhir_mapping.pull_plan`` plans, run concurrently.

``pull_record`` either returns everything the pipeline needs about one stay or raises; what it
deliberately did not fetch (references outside the EHR) it says so in the bundle, so nothing is
lost silently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from fhir_mapping.pull_plan import (
    Search,
    StayWindow,
    earlier_record_searches,
    encounter_searches,
    episode_searches,
    latest_note_search,
    record_start_searches,
    stay_search,
    stay_searches,
    stay_window,
    unbounded,
    whole_record_searches,
)
from fhir_mapping.pull_references import follow_ups, offered_includes, resource_key, with_includes
from fhir_mapping.resources import RECORD_TYPES, not_fetched_outcome
from pipeline.evidence.mapped import EPISODE_WINDOW_H, INPATIENT_CLASSES
from smartapp.core.errors import logged
from smartapp.ehr.fhir_answers import resource_type_of
from smartapp.ehr.fhir_client import (
    FhirClient,
    FhirError,
    OutsideEhrError,
    SearchResult,
)


@dataclass(frozen=True, slots=True)
class PullBounds:
    """How far around the stay a record pull reaches (``fhir_mapping.pull_plan``)."""

    window_h: float = EPISODE_WINDOW_H
    lookback_days: int = 365
    inpatient_classes: list[str] = field(default_factory=lambda: sorted(INPATIENT_CLASSES))
    # Pull everything the patient has (for an EHR whose searches cannot be bounded by date).
    whole_record: bool = False


def _merged(batches: Iterable[SearchResult]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The resources of several searches, each once (two searches may both find one)."""
    seen: set[str] = set()
    resources, not_fetched = [], []
    for batch in batches:
        not_fetched += batch.not_fetched
        for resource in batch.resources:
            key = resource_key(resource)
            if key is None or key not in seen:
                resources.append(resource)
                seen.add(key or "")
    return resources, not_fetched


async def _search(client: FhirClient, search: Search) -> SearchResult:
    """A bounded search; by patient alone when the EHR refuses a bound (more to read, nothing
    missed)."""
    try:
        return await client.search(search.resource_type, search.params)
    except FhirError as refused:
        if refused.status != 400 or set(search.params) == {"patient"}:
            raise
        logged(f"search {search.resource_type}: bounds refused, searching by patient", str(refused))
        wider = unbounded(search)
        return await client.search(wider.resource_type, wider.params)


async def _first_page(client: FhirClient, search: Search) -> SearchResult:
    """The first page of a sorted search (where the record starts, the latest note before the
    stay); an EHR that refuses the sort (4xx) leaves it unknown: the draft then says a bare
    "Not documented", or keeps the stay's chief complaint as its notes state it."""
    try:
        return await client.search(search.resource_type, search.params, pages=1)
    except FhirError as refused:
        if refused.status is None or not 400 <= refused.status < 500:
            raise
        logged(f"search {search.resource_type}: its sorted first page is unknown", str(refused))
        return SearchResult()


# Each EHR's offered ``_include`` values, by base URL, read once per process: capabilities change
# with an EHR's upgrade, not between two pulls.
OFFERED_INCLUDES: dict[str, frozenset[str]] = {}


async def offered(client: FhirClient) -> frozenset[str]:
    """What the EHR lets a search bring with it; none where its CapabilityStatement cannot be
    read (the pull then reads each reference, as it would anyway). An answer is remembered, a
    refusal (4xx) too; a fault that may pass (a timeout, a 5xx) is asked again next pull."""
    if client.base in OFFERED_INCLUDES:
        return OFFERED_INCLUDES[client.base]
    try:
        found = offered_includes(await client.capability_statement())
    except FhirError as unreadable:
        logged("CapabilityStatement unreadable, no _include", str(unreadable))
        if unreadable.status is None or unreadable.status >= 500:
            return frozenset()
        found = frozenset()
    OFFERED_INCLUDES[client.base] = found
    return found


async def _stay_searches(
    client: FhirClient,
    patient_id: str,
    stay: dict[str, Any],
    window: StayWindow,
    includes: frozenset[str] = frozenset(),
) -> tuple[list[SearchResult], dict[str, Any], list[SearchResult]]:
    """The episode's encounters, the patient, and the stay's searches. The searches by encounter
    wait for the episode; the date-bounded ones start at once, beside it, to save a round trip.
    One failure cancels the rest."""
    started: list[asyncio.Task[Any]] = []

    def start(work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        started.append(asyncio.create_task(work))
        return started[-1]

    try:
        episode_tasks = [
            start(_search(client, search))
            for search in episode_searches(patient_id, str(stay["id"]), window)
        ]
        patient = start(client.read("Patient", patient_id))
        searches = [
            *stay_searches(patient_id, window),
            *earlier_record_searches(patient_id, stay, window),
        ]
        dated = [start(_search(client, search)) for search in with_includes(searches, includes)]
        first_pages = [*record_start_searches(patient_id), latest_note_search(patient_id, window)]
        dated += [start(_first_page(client, search)) for search in first_pages]
        episode = list(await asyncio.gather(*episode_tasks))
        encounters = [str(stay["id"]), *(str(e.get("id")) for b in episode for e in b.resources)]
        linked = [
            start(_search(client, search))
            for search in with_includes(encounter_searches(patient_id, encounters), includes)
        ]
        found = list(await asyncio.gather(*dated, *linked))
        return episode, await patient, found
    except BaseException:
        for task in started:
            task.cancel()
        await asyncio.gather(*started, return_exceptions=True)
        raise


ATTACHMENT_GONE = "attachment not found in the EHR (its Binary answers 404)"


async def _binary(client: FhirClient, reference: str) -> dict[str, Any] | None:
    """A note's Binary; None when the EHR has none there (404, 410): that one document is
    excluded with its reason and the rest is drafted, rather than failing every retry."""
    try:
        return await client.binary(reference)
    except FhirError as missing:
        if missing.status not in {404, 410}:
            raise
        logged("attachment not found", resource_type_of(reference))
        return None


async def find_stay(
    client: FhirClient, patient_id: str, encounter_id: str | None, inpatient_classes: list[str]
) -> dict[str, Any] | None:
    """The stay's Encounter: the launch's, else the patient's latest inpatient encounter, else
    their latest of any class (the mapping then refuses it as not an inpatient stay)."""
    if encounter_id:
        return await client.read("Encounter", encounter_id)
    for search in stay_search(patient_id, inpatient_classes):
        found = await client.search(search.resource_type, search.params, pages=1)
        if found.resources:
            return found.resources[0]
    return None


async def _follow_references(
    client: FhirClient, resources: list[dict[str, Any]], not_fetched: list[tuple[str, str]]
) -> None:
    """What the pulled resources point to inside the EHR (medications, results, goals,
    attachments' Binaries), added to ``resources``; a reference elsewhere, or a Binary gone, is
    added to ``not_fetched`` with why."""
    wanted, binaries = follow_ups(resources)
    inside = []
    for reference in sorted(wanted | binaries):
        try:
            client.url(reference)
        except OutsideEhrError:
            logged("reference outside the EHR, not fetched", reference)
            not_fetched.append((reference, "reference outside the EHR, not fetched"))
            continue
        inside.append(reference)
    extra = await asyncio.gather(
        *(_binary(client, ref) if ref in binaries else client.read_reference(ref) for ref in inside)
    )
    for reference, resource in zip(inside, extra, strict=True):
        if resource is None:
            not_fetched.append((reference, ATTACHMENT_GONE))
        else:
            resources.append(resource)


async def pull_record(
    client: FhirClient,
    patient_id: str,
    encounter_id: str | None = None,
    bounds: PullBounds | None = None,
) -> dict[str, Any]:
    """A collection Bundle of the patient and what the pipeline reads about one stay.

    The searches are bounded by the stay (``fhir_mapping.pull_plan``); a stay without a start
    date, or a patient without any encounter, falls back to the whole record. References
    (medications, results, goals, attachments' Binaries) are followed only inside the EHR; one
    that points elsewhere is not fetched and is listed in the bundle's not-fetched outcome.
    """
    bounds = bounds or PullBounds()
    # The CapabilityStatement is read beside the stay, not after it: no round trip added.
    includes, stay = await asyncio.gather(
        offered(client), find_stay(client, patient_id, encounter_id, bounds.inpatient_classes)
    )
    window = (
        stay_window(stay, bounds.window_h, bounds.lookback_days)
        if stay and not bounds.whole_record
        else None
    )
    if stay is not None and window is not None:
        episode, patient, found = await _stay_searches(client, patient_id, stay, window, includes)
    else:
        episode = []
        searches = with_includes(whole_record_searches(patient_id, RECORD_TYPES), includes)
        patient, *found = await asyncio.gather(
            client.read("Patient", patient_id), *(_search(client, s) for s in searches)
        )
    resources, not_fetched = _merged([SearchResult([stay] if stay else []), *episode, *found])
    resources.insert(0, patient)
    await _follow_references(client, resources, not_fetched)
    if not_fetched:
        resources.append(not_fetched_outcome(not_fetched))
    return {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {"fullUrl": f"{client.base}/{key}", "resource": resource}
            if (key := resource_key(resource))
            else {"resource": resource}
            for resource in resources
        ],
    }
