"""The evidence model: facts with their provenance (``model``), the summary built from them
(``summary``), and what the FHIR mapping hands over (``mapped``).
"""

__all__ = ["mapped", "model", "summary"]
