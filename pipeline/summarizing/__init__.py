"""Writing the summary: the evidence-only draft with FOCUS, the model's extraction from notes,
and AgenticSum's loop (draft, detect, fix, supervise).
"""

__all__ = ["agentic", "draft_agent", "evidence_summary", "extraction", "focus", "summary_text"]
