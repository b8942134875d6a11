"""A CDS Hooks 2.0 service call, as the specification shapes it, for the one hook served here
(``encounter-discharge``). Anything else is refused before any work is done."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# A FHIR id (R4 ``id`` datatype): what the context's ids must be before they go into a URL.
FHIR_ID = r"^[A-Za-z0-9\-.]{1,64}$"
# userId: a reference to whoever started the discharge.
USER_REFERENCE = r"^(Practitioner|PractitionerRole|Patient|RelatedPerson)/[A-Za-z0-9\-.]{1,64}$"
DISCHARGE_HOOK = "encounter-discharge"


class FhirAuthorization(BaseModel):
    """The access token the EHR lends the service for this call (CDS Hooks 2.0). ``subject``
    is optional in the specification, and a token type is case-insensitive (RFC 6749 §5.1)."""

    model_config = ConfigDict(extra="allow")

    access_token: str = Field(min_length=1)
    token_type: str
    expires_in: int = Field(gt=0)
    scope: str
    subject: str | None = None
    patient: str | None = None


class DischargeContext(BaseModel):
    """``encounter-discharge``'s context: who is discharging which patient from which stay."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    user_id: str = Field(alias="userId", pattern=USER_REFERENCE)
    patient_id: str = Field(alias="patientId", pattern=FHIR_ID)
    encounter_id: str = Field(alias="encounterId", pattern=FHIR_ID)


class HookRequest(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    hook: str
    hook_instance: str = Field(alias="hookInstance", min_length=1)
    fhir_server: str | None = Field(None, alias="fhirServer")
    fhir_authorization: FhirAuthorization | None = Field(None, alias="fhirAuthorization")
    context: DischargeContext
    prefetch: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> HookRequest:
        if self.hook != DISCHARGE_HOOK:
            raise ValueError(f"this service answers the {DISCHARGE_HOOK} hook only")
        if self.fhir_authorization is not None and self.fhir_server is None:
            # cds-r-1: a token comes with the server it is for.
            raise ValueError("fhirAuthorization needs fhirServer")
        if (
            self.fhir_authorization is not None
            and self.fhir_authorization.token_type.lower() != "bearer"
        ):
            raise ValueError("fhirAuthorization.token_type must be Bearer")
        return self

    def prefetched(self, key: str, resource_type: str, resource_id: str) -> dict[str, Any] | None:
        """A prefetched resource, only when it is the one the context names (a prefetch for
        another patient or stay is never used)."""
        found = (self.prefetch or {}).get(key)
        if not isinstance(found, dict):
            return None
        if found.get("resourceType") != resource_type or found.get("id") != resource_id:
            return None
        return found
