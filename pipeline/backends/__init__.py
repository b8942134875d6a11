"""Language models: the chat protocol every backend answers, the answer schemas, the local
transformers backend with its attention read (AURA), and the sentence encoder.

``__all__`` names the modules other rooms and packages may import; the rest are this room's own.
"""

__all__ = [
    "answer_schemas",
    "attention",
    "chat",
    "llm",
    "loading",
    "retrieval",
]
