"""Talking to the EHR: the guarded HTTP transport, the FHIR client, the record pull, the scopes
granted, and the write-back of drafts."""
