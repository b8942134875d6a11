"""Language models: the chat protocol every backend answers, the answer schemas, the local
transformers backend with its attention read (AURA), the sentence encoder, and the trained claim
verifier (LoRA adapters over that encoder, its weights and cards in ``weights/claim_judge``).
"""

__all__ = [
    "answer_schemas",
    "attention",
    "chat",
    "claim_judge",
    "llm",
    "loading",
    "lora",
    "retrieval",
]
