"""The evidence model: facts with their provenance (``model``), the summary built from them
(``summary``), and what the FHIR mapping hands over (``mapped``).

``__all__`` names the modules other rooms and packages may import; the rest are this room's own.
"""

__all__ = [
    "mapped",
    "model",
    "summary",
]
