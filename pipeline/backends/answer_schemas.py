"""The JSON schemas the model's answers must match: drafted and fixed sentences, entailment
verdicts and note extractions.

They describe the real task. A hospital course has as many sentences as the stay needs, of normal
length, each citing what supports it; a quote is as long as the note's sentence. The limits are
sanity bounds against a runaway decoder, far above what a summary needs (``SchemaLimits``);
a tiny test model is given small ones by its test, never by these defaults. Every object lists all
its properties as required and forbids others, as OpenAI's strict structured outputs ask.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.settings import SchemaLimits

EXTRACTION_CATEGORIES = [
    "diagnosis",
    "medication",
    "allergy",
    "procedure",
    "pending_result",
    "follow_up",
]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _text(limit: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": limit}


def sentences_schema(
    limits: SchemaLimits, citable: list[str], *, for_fix: bool = False
) -> dict[str, Any]:
    """A draft (or one flagged sentence's fix): sentences citing only facts that exist."""
    citation: dict[str, Any] = {"enum": citable} if citable else {"type": "string"}
    item = _object(
        {
            "text": _text(limits.sentence_chars),
            "citations": {
                "type": "array",
                "items": citation,
                "maxItems": limits.citations_per_sentence,
            },
        }
    )
    most = limits.sentences_per_fix if for_fix else limits.course_sentences
    return _object({"sentences": {"type": "array", "items": item, "maxItems": most}})


def entailment_schema(limits: SchemaLimits) -> dict[str, Any]:
    """A verdict on one sentence, with the spans of it the evidence does not support."""
    return _object(
        {
            "label": {"enum": ["supported", "unsupported"]},
            "spans": {
                "type": "array",
                "items": _text(limits.span_chars),
                "maxItems": limits.entailment_spans,
            },
        }
    )


def extraction_schema(limits: SchemaLimits) -> dict[str, Any]:
    """Facts found on a page chunk, each with the quote that states it."""
    item = _object(
        {
            "category": {"enum": EXTRACTION_CATEGORIES},
            "text": _text(limits.item_chars),
            "quote": _text(limits.quote_chars),
        }
    )
    return _object({"items": {"type": "array", "items": item, "maxItems": limits.extraction_items}})


# JSON is written at no fewer than about this many characters per token by the tokenizers in use
# (measured on SmolLM2's: 3.3 on extraction answers); a budget from it does not cut an answer the
# schema allows, only a decoder that runs past it.
CHARS_PER_TOKEN = 3


def longest_answer_chars(schema: dict[str, Any]) -> int:
    """The most characters an answer matching ``schema`` can take, written compactly."""
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        # Each character may be escaped ("\n", "\""): twice its length, with the quotes.
        return 2 * int(schema.get("maxLength", 1000)) + 2
    if kind == "array":
        item = longest_answer_chars(schema.get("items", {}))
        return int(schema.get("maxItems", 100)) * (item + 1) + 2
    if kind == "object":
        properties = schema.get("properties", {})
        return 2 + sum(
            len(key) + 4 + longest_answer_chars(value) for key, value in properties.items()
        )
    return 24  # a number, a boolean or null


def answer_budget(schema: dict[str, Any]) -> int:
    """The tokens an answer to ``schema`` may need: the budget of the call that asks for it."""
    return longest_answer_chars(schema) // CHARS_PER_TOKEN + 16
