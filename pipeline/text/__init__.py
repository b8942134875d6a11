"""Plain-text tools every other room reads with: words, sentences, rendering for people,
HTML to text, and a model's echoes of its prompt.
"""

__all__ = ["echoes", "html_text", "rendering", "sentences", "words"]
