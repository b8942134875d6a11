"""Jinja templates: prompts, pages and narratives live here as files, never as strings in code."""
