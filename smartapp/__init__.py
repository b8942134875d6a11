"""The Litestar SMART-on-FHIR app: launch, FHIR client, jobs, persistence, write-back, review.

Empty until the SMART launch issue lands; packaged now so the layering is in place.
"""
