"""Checking sentences against the evidence: what a sentence claims, whether its numbers, drugs
and words are supported, whether its meaning is (the claim verifier's check), which note text is
addressed to a tool, and a physician's review applied to a summary.
"""

__all__ = ["addressed_text", "checker", "claims", "entailment", "model_judge", "review", "verify"]
