"""Clinical rules computed in code: medications and their reconciliation, results, diagnoses,
what a clinical term says of itself and what the episode's diagnoses say the stay did, the past
history that bears on the principal diagnosis, heart failure's kind, a problem its defining
measure no longer bears out, kidney function for dosing, conflicts between sources, a
transplant's indication, the shipped clinical tables, the helpers the rules share to read what
goes home, and the agent that runs the rules in order.
"""

__all__ = [
    "agent",
    "clinical_terms",
    "diagnoses",
    "diagnosis_specifics",
    "drug_classes",
    "episode_diagnoses",
    "heart_failure",
    "kidney_function",
    "medications",
    "note_medications",
    "pain_plan",
    "problem_measures",
    "record_conflicts",
    "relevant_history",
    "results",
    "risk_flags",
    "screening",
    "strengths",
    "tables",
    "transplant",
    "validate",
]
