"""Clinical rules computed in code: medications and their reconciliation, results, diagnoses,
conflicts between sources, a transplant's indication, the shipped clinical tables, and the agent
that runs the rules in order.
"""

__all__ = [
    "agent",
    "diagnoses",
    "drug_classes",
    "medications",
    "note_medications",
    "record_conflicts",
    "results",
    "tables",
    "transplant",
    "validate",
]
