"""The Litestar SMART-on-FHIR app: launch, FHIR client, jobs, persistence, write-back, the
physician's review and sign-off, and the FHIR API other systems pull summaries from."""
