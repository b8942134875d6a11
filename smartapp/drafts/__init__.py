"""Drafts after they exist: the physician's review, edits and sign-off, the review pages, and the
export of edits."""
