"""Provenote's pipeline: the evidence model, note ingestion, reconciliation and safety checks.

It knows nothing about FHIR or HTTP (ARCHITECTURE.md), so it can be driven from plain objects.
Its rooms, each importing only itself and those before it (``tests/test_layering.py``):

- ``errors``: the errors the pipeline raises;
- ``text``: words, sentences, rendering;
- ``evidence``: the evidence model, the summary, what the FHIR mapping hands over;
- ``settings``: the pipeline's knobs and their defaults;
- ``clinical``: medications, results, diagnoses, conflicts, the clinical tables;
- ``ingestion``: documents, PDF, OCR, identity;
- ``backends``: the language-model backends and the sentence encoder;
- ``checking``: whether a sentence is supported by the evidence;
- ``summarizing``: FOCUS, the evidence-only summary, extraction, the agentic loop;
- ``build``: the evidence state from a mapped record, the one entry that uses them all.

Each room's ``__all__`` names the modules other rooms and packages may import; the rest are the
room's own.
"""
