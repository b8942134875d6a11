"""FHIR R4 resources to the evidence state, and (later) the summary back to FHIR. Pure functions."""
