"""The evidence-only draft's sections, one module per part of the summary, each rendering its
sentences from the facts they cite; :mod:`pipeline.summarizing.evidence_summary` joins them."""
