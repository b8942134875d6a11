"""What the error classes read from a raw Synthea bundle itself (its orders and their codes),
never from the pipeline's mapping of it: a bench that read the mapping would miss the mapping's
own regressions."""

from __future__ import annotations

from typing import Any


def orders(data: dict[str, Any], patient: str) -> list[dict[str, Any]]:
    return [
        entry["resource"]
        for entry in data.get("entry", [])
        if entry["resource"].get("resourceType") == "MedicationRequest"
        and entry["resource"].get("subject", {}).get("reference", "").endswith(patient)
    ]


def rxnorm(order: dict[str, Any]) -> str | None:
    codings = order.get("medicationCodeableConcept", {}).get("coding", [])
    return codings[0].get("code") if codings else None
