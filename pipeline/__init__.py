"""Provenote's pipeline: the evidence model, note ingestion, reconciliation and safety checks.

It knows nothing about FHIR or HTTP (ARCHITECTURE.md), so it can be driven from plain objects.
"""
