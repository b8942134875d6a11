"""Provenote's own FHIR API: how other systems pull drafts and signed summaries, and the checks on
their tokens."""
