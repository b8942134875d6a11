"""FHIR R4 resources to the evidence state, and the summary back to FHIR: the draft Composition,
its sign-off, and how Provenote's own API serves it. Pure functions."""
