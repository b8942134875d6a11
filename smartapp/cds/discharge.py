"""The ``encounter-discharge`` service: what one hook call does and which card it answers.

It never waits for a draft. A stay whose draft is waiting gets the "ready" card, with its open
flags counted and the card's indicator set by the worst of them; a stay being drafted gets the
"drafting" card; any other inpatient stay is queued for drafting (with the token the hook lent,
or as Provenote itself when it lent none) and gets the "drafting" card. A stay that is not
inpatient, one already signed, and an EHR whose registration turns the service off get no card.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import uuid4

from pipeline.evidence.summary import Sentence
from smartapp.access.oauth import TokenResponse
from smartapp.access.sessions import LaunchContext, SessionStore, StoredTokens
from smartapp.access.smart_errors import SmartError
from smartapp.access.tokens import EhrAccess
from smartapp.cds.caller import HookRefusedError
from smartapp.cds.hook_request import HookRequest
from smartapp.core.errors import LaunchError
from smartapp.core.registrations import ClientRegistration, normalise_issuer
from smartapp.core.settings import Settings
from smartapp.core.statuses import ACTIVE_JOB_STATES, DraftStatus, JobOrigin
from smartapp.core.tables import DraftRow, JobRow
from smartapp.drafts.review import reviewed
from smartapp.drafts.service import DraftService
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.jobs.service import JobService

SERVICE_ID = "provenote-discharge-summary"
Indicator = Literal["info", "warning", "critical"]
# Flags that can change what the patient is sent home with, or say the draft may describe the
# wrong patient: a card with one open is "critical".
CRITICAL_FLAGS = frozenset(
    {
        "allergy_conflict",
        "conflict",
        "critical_result",
        "acute_kidney_injury",
        "medication_discrepancy",
        "therapeutic_duplication",
        "choice_in_doubt",
        "stop_proposed",
        "wrong_patient_document",
        "note_instruction",
    }
)


# What a card says when the stay is queued again, or drafted as Provenote itself, so nothing
# happens behind the physician's back.
LENT_TOKEN_REFUSED = (
    "The EHR did not accept the access it lent with this call, so Provenote drafts with its own "
    "access to the record (SMART Backend Services)."
)
LAST_ATTEMPT_FAILED = "The last drafting attempt failed ({error}); drafting again."


@dataclass(frozen=True, slots=True)
class HookCard:
    """The one card a call answers: a draft ready to review, or one being drafted."""

    kind: Literal["ready", "drafting"]
    # What the card's SMART link hands the launch (``appContext``): the draft or the job.
    app_context: str
    flags: int = 0
    indicator: Indicator = "info"
    # Said after the card's detail: why the stay is drafted as it is.
    note: str = ""
    uuid: str = field(default_factory=lambda: str(uuid4()))


@dataclass(frozen=True, slots=True)
class Services:
    """What a hook call works with (the process's, handed over by the controller)."""

    settings: Settings
    access: EhrAccess
    store: SessionStore
    drafts: DraftService
    jobs: JobService


def indicator_for(open_flags: list[Sentence]) -> Indicator:
    """The card's urgency: critical for a flag that can harm (or an unsupported statement),
    warning for any other open flag, info when none is open."""
    if any(sentence.verdict == "unsupported" for sentence in open_flags) or any(
        flag.code in CRITICAL_FLAGS for sentence in open_flags for flag in sentence.flags
    ):
        return "critical"
    return "warning" if open_flags else "info"


def _card(kind: Literal["ready", "drafting"], named: dict[str, str], **fields: Any) -> HookCard:
    return HookCard(kind, json.dumps(named), **fields)


async def _encounter(
    services: Services, iss: str, call: HookRequest, patient: str, encounter: str
) -> dict[str, Any]:
    """The stay, from the prefetch when the EHR sent it, else read; it must be the patient's."""
    found = call.prefetched("encounter", "Encounter", encounter)
    if found is None:
        try:
            found = await (await _client(services, iss, call)).read("Encounter", encounter)
        except (FhirError, SmartError, LaunchError) as failure:
            # CDS Hooks: 412 when the service cannot get the data it needs.
            raise HookRefusedError(
                412, "precondition_failed", "the encounter could not be read from the EHR"
            ) from failure
    subject = found.get("subject")
    reference = subject.get("reference") if isinstance(subject, dict) else None
    if not isinstance(reference, str) or reference.split("/")[-2:] != ["Patient", patient]:
        raise HookRefusedError(400, "invalid_request", "the encounter is not the patient's")
    return found


async def _client(services: Services, iss: str, call: HookRequest) -> FhirClient:
    lent = call.fhir_authorization
    if lent is not None:
        return services.access.client_with_token(iss, lent.access_token)
    client, _ = await services.access.backend_client(iss)
    return client


async def _ready(services: Services, draft: DraftRow) -> HookCard:
    loaded = await services.drafts.load(draft.id)
    open_flags = reviewed(loaded).open_flags if loaded is not None else []
    return _card(
        "ready", {"draft": draft.id}, flags=len(open_flags), indicator=indicator_for(open_flags)
    )


async def _lent_token_refused(services: Services, iss: str, call: HookRequest) -> bool:
    """Whether the EHR refuses the token it lent with this call (one read of the stay): a job
    must not start on access that is already gone."""
    lent = call.fhir_authorization
    if lent is None:
        return False
    client = services.access.client_with_token(iss, lent.access_token)
    try:
        await client.read("Encounter", call.context.encounter_id)
    except FhirError as failure:
        return failure.status in {401, 403}
    return False


async def _queue(
    services: Services, registration: ClientRegistration, call: HookRequest, lent_works: bool
) -> JobRow:
    """The stay's drafting job: with the hook's token, kept as a session no browser holds, or
    as Provenote itself; written to the chart only as the registration allows."""
    iss, context, lent = registration.issuer, call.context, call.fhir_authorization
    stay = (iss, context.patient_id, context.encounter_id)
    if lent is None or not lent_works:
        return await services.jobs.submit(
            *stay, origin=JobOrigin.PREDRAFT, may_write=registration.predraft_writes
        )
    session_id = SessionStore.new_id()
    ends = time.time() + lent.expires_in
    launch = LaunchContext(
        iss=iss,
        patient=context.patient_id,
        encounter=context.encounter_id,
        fhir_user=f"{iss}/{context.user_id}",
        scope=lent.scope,
        grant_ends_at=ends,
    )
    tokens = TokenResponse(access_token=lent.access_token, expires_in=lent.expires_in)
    await services.store.save(
        session_id, launch, StoredTokens(config=None, tokens=tokens, expires_at=ends)
    )
    job = await services.jobs.submit(
        *stay,
        session_id=session_id,
        origin=JobOrigin.HOOK,
        may_write=registration.predraft_writes,
    )
    if job.session_id != session_id:  # joined a job under way: the lent token is not needed
        await services.store.end(session_id)
    return job


async def discharge_card(
    services: Services, registration: ClientRegistration, call: HookRequest
) -> HookCard | None:
    """The card for this call, or None (no card); HookRefusedError when it cannot be served."""
    iss = registration.issuer
    if call.fhir_server is not None and normalise_issuer(call.fhir_server) != iss:
        # The lent token is never sent anywhere but the registered EHR's FHIR base.
        raise HookRefusedError(403, "access_denied", "fhirServer is not this EHR's FHIR base")
    if not registration.cds_hooks:
        return None
    patient, encounter = call.context.patient_id, call.context.encounter_id
    stay = await _encounter(services, iss, call, patient, encounter)
    kind = stay.get("class")
    if not isinstance(kind, dict) or kind.get("code") not in services.settings.inpatient_classes:
        return None
    draft = await services.drafts.latest_for_stay(iss, patient, encounter)
    if draft is not None and draft.status in {DraftStatus.FINAL, DraftStatus.SIGNING}:
        return None
    job = await services.jobs.latest_for(iss, patient, encounter)
    if job is not None and job.state in ACTIVE_JOB_STATES:
        return _card("drafting", {"job": job.id})
    if draft is not None and draft.status == DraftStatus.PRELIMINARY:
        return await _ready(services, draft)
    notes = [LAST_ATTEMPT_FAILED.format(error=job.error)] if job is not None and job.error else []
    lent_works = not await _lent_token_refused(services, iss, call)
    if not lent_works:
        if not registration.acts_as_itself:
            raise HookRefusedError(
                412,
                "precondition_failed",
                "the EHR did not accept the fhirAuthorization token it lent, and Provenote has "
                "no Backend Services client registered at this EHR",
            )
        notes.append(LENT_TOKEN_REFUSED)
    job = await _queue(services, registration, call, lent_works)
    indicator: Indicator = "warning" if notes else "info"
    return _card("drafting", {"job": job.id}, indicator=indicator, note=" ".join(notes))
