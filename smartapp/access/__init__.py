"""How Provenote holds access to an EHR, for a launch, a CDS hook and a job alike: the EHR's SMART
configuration, OAuth grants and their tokens (refreshed once, under a lock), the sessions that
keep them, and FHIR clients that act with them."""
