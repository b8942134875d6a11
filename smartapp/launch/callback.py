"""The steps of a SMART launch's callback, each named, for the handler to run in order: the
authorization answer checked against the launch it answers, the code exchanged and the id_token
checked, the user's name read, and a stay that is not inpatient refused."""

from __future__ import annotations

from typing import Any

from litestar.response import Response

from fhir_mapping.demographics import person_name
from pipeline.text.rendering import render
from smartapp.access.sessions import LaunchContext, PendingLaunch, SessionStore, StoredTokens
from smartapp.access.smart_errors import SetupError, SmartError
from smartapp.access.tokens import EhrAccess, grant_ends_at, token_expiry
from smartapp.core.registrations import callback_id, normalise_issuer
from smartapp.core.responses import error_page, html, setup_problem
from smartapp.ehr.fhir_client import FhirClient, FhirError
from smartapp.launch.id_tokens import validate_id_token
from smartapp.launch.roles import practitioner_reference


def refused(failure: SmartError, status: int = 502) -> Response[Any]:
    """A launch step that failed: a setup problem says who can fix it; anything else may
    succeed when launched again."""
    if isinstance(failure, SetupError):
        return setup_problem(str(failure), status)
    return error_page(str(failure), status)


def cookies_refused(launch_url: str | None) -> Response[str]:
    """The state was genuine but the browser kept no cookie for Provenote inside the EHR's
    frame (third-party cookies blocked): offer the launch in a window of its own."""
    return html(render("app/cookies_refused.html.j2", launch_url=launch_url), 400)


def answer_refused(
    pending: PendingLaunch, registration_id: str, iss: str | None, code: str | None
) -> Response[Any] | None:
    """Why the authorization answer cannot be used, or None. It must come back to the
    callback of the EHR the launch went to (each has its own), so a code that another EHR
    issued is never sent to this one's token endpoint, whether or not the EHR sends ``iss``."""
    config = pending.config
    if registration_id != callback_id(pending.iss):
        return error_page("The authorization response came back for another EHR.", 403)
    if (iss is not None or config.authorization_response_iss_parameter_supported) and (
        normalise_issuer(iss or "") != normalise_issuer(config.issuer or "")
    ):
        return error_page("The authorization response came from another server.", 403)
    if not code:
        return error_page("The EHR sent no authorization code.")
    return None


async def exchange(
    access: EhrAccess, pending: PendingLaunch, code: str
) -> tuple[LaunchContext, StoredTokens]:
    """The code for tokens, the id_token checked: the launch context and the tokens to keep."""
    config = pending.config
    registration = access.registration(pending.iss)
    tokens = await access.token_endpoint(config, registration).exchange_code(
        code=code,
        verifier=pending.verifier,
        redirect_uri=access.settings.redirect_uri_for(registration.issuer),
    )
    claims = (
        await validate_id_token(
            access.http, config, tokens.id_token, registration.client_id, pending.nonce
        )
        if tokens.id_token
        else {}
    )
    context = LaunchContext(
        iss=pending.iss,
        patient=tokens.patient,
        encounter=tokens.encounter,
        fhir_user=claims.get("fhirUser"),
        need_patient_banner=tokens.need_patient_banner,
        smart_style_url=tokens.smart_style_url,
        scope=tokens.scope,
        grant_ends_at=grant_ends_at(tokens),
        app_context=tokens.app_context,
    )
    stored = StoredTokens(config=config, tokens=tokens, expires_at=token_expiry(tokens.expires_in))
    return context, stored


async def open_session(
    store: SessionStore, access: EhrAccess, context: LaunchContext, stored: StoredTokens
) -> tuple[str, LaunchContext]:
    """A new session, whose id only the server chose (never the cookie the browser brought),
    its context with the user's name when the EHR lets us read it."""
    session_id = SessionStore.new_id()
    await store.save(session_id, context, stored)
    named = await with_user_name(access, session_id, context)
    if named is not context:
        await store.save(session_id, named, stored)
    return session_id, named


async def with_user_name(
    access: EhrAccess, session_id: str, context: LaunchContext
) -> LaunchContext:
    """The context with the user's name from their fhirUser resource (the signer is shown by
    name); as it was when the EHR does not let us read it."""
    reference = practitioner_reference(context.fhir_user)
    if reference is None:
        return context
    try:
        user = await access.client_for(session_id, context.iss).read_reference(reference)
    except FhirError:
        return context
    name = person_name(user)
    return context.model_copy(update={"user_name": name}) if name else context


async def not_inpatient(
    access: EhrAccess, session_id: str, context: LaunchContext
) -> Response[Any] | None:
    """The refusal of a launch for a stay that is not inpatient, or None."""
    if not (context.patient and context.encounter):
        return None
    client = access.client_for(session_id, context.iss)
    kind = await stay_class(client, context.encounter)
    if kind is None or kind in access.settings.inpatient_classes:
        return None
    return error_page(
        f"Provenote drafts discharge summaries for inpatient stays; this encounter "
        f"is of class {kind}. Nothing was drafted or written to the chart.",
        409,
        heading="Not an inpatient stay",
    )


async def stay_class(client: FhirClient, encounter: str) -> str | None:
    """The encounter's class code, or None when the EHR does not let us read it."""
    try:
        resource = await client.read("Encounter", encounter)
    except FhirError:
        return None
    kind = resource.get("class")
    return kind.get("code") if isinstance(kind, dict) else None
